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
pub fn protected_place(home: &Path, path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok();
    let real_home = std::fs::canonicalize(home).ok();
    let homes: Vec<&Path> = std::iter::once(home).chain(real_home.as_deref()).collect();
    for p in std::iter::once(path).chain(real.as_deref()) {
        for h in &homes {
            for (folder, name) in HOME_FOLDERS {
                if p.starts_with(h.join(folder)) {
                    return Some(name.to_owned());
                }
            }
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
/// pairs, e.g. `("the Oysterun root", root)`; `program` is what launchd runs (oyster's stable
/// path), the one to allow.
pub fn warnings(home: &Path, paths: &[(&str, &Path)], program: &Path) -> Vec<String> {
    paths
        .iter()
        .filter_map(|(what, path)| {
            let place = protected_place(home, path)?;
            Some(format!(
                "{what} {} lies in {place}, which macOS privacy protection keeps programs launchd \
                 runs from reading (the Host would fail with \"Operation not permitted\"); move it \
                 out (e.g. a checkout to ~/oysterun), or allow it in System Settings → Privacy & \
                 Security → Files and Folders (or Full Disk Access) for {}",
                path.display(),
                program.display()
            ))
        })
        .collect()
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
            Path::new("/usr/local/bin/oyster"),
        );
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("Privacy & Security → Files and Folders")
                && w[0].contains("/usr/local/bin/oyster"),
            "{}",
            w[0]
        );
    }
}
