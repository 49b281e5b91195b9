//! Folders macOS's privacy protection (TCC, since 10.15) keeps a launchd agent from reading
//! unless the user allows it: `~/Documents`, `~/Desktop`, `~/Downloads`, iCloud Drive
//! (`~/Library/Mobile Documents`) and removable volumes. A program launchd runs cannot be asked
//! (there is no UI), so access is denied silently (`Operation not permitted`, EPERM): a
//! checkout that runs fine from Terminal crash-loops under launchd. Planning names every path
//! the Host needs that lies there, with the setting to change.

use std::path::{Component, Path, PathBuf};

/// The protected folders under HOME, and what System Settings calls them.
const HOME_FOLDERS: [(&str, &str); 4] = [
    ("Documents", "the Documents folder"),
    ("Desktop", "the Desktop folder"),
    ("Downloads", "the Downloads folder"),
    ("Library/Mobile Documents", "iCloud Drive"),
];

/// Which protected place `path` lies in (`Some("the Documents folder")`, `Some("the removable
/// volume /Volumes/USB")`), or `None`. Both the path as given and where its links lead count
/// (a `~/code` that links into `~/Documents` is as protected).
#[cfg(test)]
fn protected_place(home: &Path, path: &Path) -> Option<String> {
    place_in(&Homes::of(home), path)
}

/// HOME as given and where its links lead, with the protected folders under each: worked out
/// once for every path asked about.
struct Homes(Vec<(PathBuf, &'static str)>);

impl Homes {
    fn of(home: &Path) -> Homes {
        let real_home = std::fs::canonicalize(home).ok();
        Homes(
            std::iter::once(home)
                .chain(real_home.as_deref())
                .flat_map(|h| HOME_FOLDERS.map(|(folder, name)| (h.join(folder), name)))
                .collect(),
        )
    }
}

fn place_in(homes: &Homes, path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok();
    for p in std::iter::once(path).chain(real.as_deref()) {
        if let Some((_, name)) = homes.0.iter().find(|(folder, _)| p.starts_with(folder)) {
            return Some((*name).to_owned());
        }
        if let Some(volume) = removable_volume(p) {
            return Some(format!("the removable volume {}", volume.display()));
        }
    }
    None
}

/// `/Volumes/<name>` for a path on a volume other than the boot volume (whose entry in
/// `/Volumes` is a link to `/`).
fn removable_volume(path: &Path) -> Option<PathBuf> {
    let mut parts = path.components();
    if parts.next() != Some(Component::RootDir)
        || parts.next() != Some(Component::Normal("Volumes".as_ref()))
    {
        return None;
    }
    let Some(Component::Normal(name)) = parts.next() else {
        return None;
    };
    let volume = Path::new("/Volumes").join(name);
    let boot = std::fs::canonicalize(&volume).is_ok_and(|r| r == Path::new("/"));
    (!boot).then_some(volume)
}

/// One warning line per path the Host needs that lies in a protected place: `(what, path)`
/// pairs, e.g. `("the Oysterun root", root)`. `node` is the pinned Node: launchd's job becomes
/// Node (oyster execs it as the same pid), so the program privacy protection asks about, and
/// the one a grant must name, is the resolved Node binary, not oyster.
pub fn warnings(home: &Path, paths: &[(&str, &Path)], node: &Path) -> Vec<String> {
    let homes = Homes::of(home);
    // The grant reads two signatures: once, and only when some path is protected.
    let advice = std::cell::OnceCell::new();
    paths
        .iter()
        .filter_map(|(what, path)| {
            let place = place_in(&homes, path)?;
            let warning = Protected {
                what: (*what).to_owned(),
                path: path.to_path_buf(),
                place,
                grant: advice.get_or_init(|| grant(node)).clone(),
            };
            Some(warning.to_string())
        })
        .collect()
}

/// How to grant access instead, naming both programs that read the Host's files (issue 39
/// item 5): the resolved Node binary, which launchd's job becomes (oyster execs it as the same
/// pid); and oyster itself, whose launch program runs Oysterun's dashboard-credentials step as
/// a Node child before it execs: macOS charges a child's access to the program responsible for
/// it, oyster, so with only Node granted that step fails with EPERM (and is only logged).
/// "Files and Folders" lists only programs that already asked and has no "+", so the grant a
/// user can give by hand is Full Disk Access, which asks for an administrator. Whether it
/// outlives an upgrade depends on each program's signature, read here (`signing`).
pub fn grant(node: &Path) -> Grant {
    let node = resolved(node);
    let oyster = std::env::current_exe()
        .map(|p| resolved(&p))
        .unwrap_or_else(|_| PathBuf::from("oyster"));
    let lifetime = |name: &str, path: &Path| {
        crate::host::signing::grant_lifetime(name, path, &crate::host::signing::of(path))
    };
    Grant {
        node_lifetime: lifetime("Node", &node),
        oyster_lifetime: lifetime("oyster", &oyster),
        node,
        oyster,
    }
}

/// The Full Disk Access grant to give instead ([`grant`]): both programs and whether each
/// grant outlives an upgrade. Words: `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub node: PathBuf,
    pub node_lifetime: crate::host::signing::GrantLifetime,
    pub oyster: PathBuf,
    pub oyster_lifetime: crate::host::signing::GrantLifetime,
}

/// A path the Host needs (`what`, e.g. "the Oysterun root") that lies in a protected `place`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    pub what: String,
    pub path: PathBuf,
    pub place: String,
    pub grant: Grant,
}

/// The pinned Node is not the one the last verified start ran: `old` was, `now` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeChanged {
    pub old: String,
    pub now: PathBuf,
}

/// `node` with its links resolved (`/opt/homebrew/bin/node` → the Cellar binary).
pub fn resolved(node: &Path) -> PathBuf {
    std::fs::canonicalize(node).unwrap_or_else(|_| node.to_path_buf())
}

/// What identifies a Node binary to privacy protection as far as oyster can see it without
/// code signatures: its resolved path, device, inode, size and modification time. A grant
/// given to one identity does not hold for another.
pub fn node_identity(node: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let real = resolved(node);
    let m = std::fs::metadata(&real).ok()?;
    Some(format!(
        "{}\n{} {} {} {}\n",
        real.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime()
    ))
}

/// The file in a stack's run dir that holds the Node identity of the last verified start.
pub fn verified_node_path(run_dir: &Path) -> PathBuf {
    run_dir.join("verified-node")
}

/// When the pinned Node is not the one the last verified start ran (upgraded since), the
/// sentence that says so: a grant given to the old one does not carry over. `None` when it
/// is the same, or nothing was recorded.
pub fn node_changed(run_dir: &Path, node: &Path) -> Option<NodeChanged> {
    let bytes = crate::sys::fs::read_regular(&verified_node_path(run_dir), 64 * 1024).ok()??;
    let was = String::from_utf8_lossy(&bytes).into_owned();
    let now = node_identity(node)?;
    // A Developer ID signed Node at the same path keeps its grant across upgrades (issue 39
    // item 5): only its signer and path are asked about.
    let same_path = was.lines().next() == Some(&*resolved(node).to_string_lossy());
    if same_path
        && !crate::host::signing::versioned_path(&resolved(node))
        && matches!(
            crate::host::signing::of(&resolved(node)),
            crate::host::signing::Signing::DeveloperId(_)
        )
    {
        return None;
    }
    (was != now).then(|| NodeChanged {
        old: was.lines().next().unwrap_or("?").to_owned(),
        now: resolved(node),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protected_folders_and_only_those() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("u");
        for (path, want) in [
            ("Documents/oysterun", Some("the Documents folder")),
            ("Desktop/x", Some("the Desktop folder")),
            ("Downloads", Some("the Downloads folder")),
            (
                "Library/Mobile Documents/com~apple~CloudDocs/o",
                Some("iCloud Drive"),
            ),
            ("Documentsx/o", None),
            ("code/oysterun", None),
            ("Library/Application Support/o", None),
        ] {
            assert_eq!(
                protected_place(&home, &home.join(path)).as_deref(),
                want,
                "{path}"
            );
        }
        // A link into a protected folder counts.
        std::fs::create_dir_all(home.join("Documents/real")).unwrap();
        std::os::unix::fs::symlink(home.join("Documents/real"), home.join("code")).unwrap();
        assert_eq!(
            protected_place(&home, &home.join("code")).as_deref(),
            Some("the Documents folder")
        );
        assert_eq!(
            protected_place(&home, Path::new("/Volumes/USB Stick/o")).as_deref(),
            Some("the removable volume /Volumes/USB Stick")
        );
        assert_eq!(protected_place(&home, Path::new("/opt/o")), None);
        let w = warnings(
            &home,
            &[("the Oysterun root", &home.join("Desktop/o"))],
            Path::new("/usr/local/bin/node"),
        );
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("Privacy & Security → Full Disk Access → +")
                && w[0].contains("Node (/usr/local/bin/node;")
                && w[0].contains("again after every Node upgrade")
                && w[0].contains("and oyster (")
                && w[0].contains("dashboard-credentials step"),
            "{}",
            w[0]
        );
    }
}
