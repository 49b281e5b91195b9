//! Who is on this Mac, as root's inventory sees it: the login-items profile's state, the
//! accounts with stacks, and each one's part, collected by oyster run as that user.

use super::*;

/// Whether the Managed Login Items profile is installed: asked of `profiles` as root on
/// macOS; elsewhere `null`, with the reason.
pub fn profile_state() -> ProfileState {
    let identifier = crate::fleet::profile::PROFILE_IDENTIFIER;
    let (installed, reason) = read_profiles(identifier);
    ProfileState {
        identifier,
        installed,
        reason,
    }
}

#[cfg(target_os = "macos")]
fn read_profiles(identifier: &str) -> (Option<bool>, Option<String>) {
    if crate::sys::user::euid() != 0 {
        return (None, Some(super::Fix::ProfilesNeedRoot.to_string()));
    }
    match crate::sys::process::Program::new(Path::new("/usr/bin/profiles"))
        .args(["show", "-type", "configuration"])
        .timeout(Duration::from_secs(20))
        .run()
    {
        Ok(f) if f.code == 0 => (Some(names_profile(&f.stdout, identifier)), None),
        Ok(f) => (
            None,
            Some(format!(
                "`profiles show` exited with {}: {}",
                f.code,
                f.stderr.trim()
            )),
        ),
        Err(e) => (None, Some(e.to_string())),
    }
}

#[cfg(not(target_os = "macos"))]
fn read_profiles(_identifier: &str) -> (Option<bool>, Option<String>) {
    (
        None,
        Some("configuration profiles exist only on macOS".into()),
    )
}

/// Whether `profiles show -type configuration`'s report names the profile `identifier` as a
/// whole word (`_computerlevel[1] attribute: profileIdentifier: ID`; the report is text, its
/// layout varies by release, so the identifier is matched exactly, never as a prefix of a
/// longer one).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(super) fn names_profile(report: &str, identifier: &str) -> bool {
    report
        .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
        .any(|w| w == identifier)
}

/// A user of this Mac whose home holds stacks (root's inventory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    pub home: PathBuf,
}

/// The people on this Mac whose home holds stacks: local accounts from uid 500 (macOS, from
/// `dscl . -list /Users UniqueID`, and the console owner, who may be a network account) or
/// 1000 (elsewhere, from /etc/passwd), `_` service accounts and `nobody` left out.
pub fn accounts_with_stacks() -> (Vec<Account>, Vec<Problem>) {
    let (uids, problems) = candidate_uids();
    let mut out: Vec<Account> = vec![];
    for uid in uids {
        if out.iter().any(|a| a.uid == uid) {
            continue;
        }
        let user = match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
            Ok(Some(u)) => u,
            _ => continue,
        };
        if user.name.starts_with('_') || user.name == "nobody" {
            continue;
        }
        let env = StackEnv {
            home: Some(user.dir.clone()),
            stacks_dir: None,
            config_dir: None,
        };
        if stack::discover(&env).is_empty() {
            continue;
        }
        out.push(Account {
            uid,
            gid: user.gid.as_raw(),
            name: user.name,
            home: user.dir,
        });
    }
    out.sort_by_key(|a| a.uid);
    (out, problems)
}

#[cfg(target_os = "macos")]
fn candidate_uids() -> (Vec<u32>, Vec<Problem>) {
    let mut uids: Vec<u32> = console_owner().filter(|&u| u != 0).into_iter().collect();
    let mut problems = vec![];
    match crate::sys::process::Program::new(Path::new("/usr/bin/dscl"))
        .args([".", "-list", "/Users", "UniqueID"])
        .timeout(Duration::from_secs(20))
        .run()
    {
        Ok(f) if f.code == 0 => uids.extend(parse_accounts(&f.stdout, 500)),
        Ok(f) => problems.push(accounts_unlisted(format!(
            "dscl exited with {}: {}",
            f.code,
            f.stderr.trim()
        ))),
        Err(e) => problems.push(accounts_unlisted(e.to_string())),
    }
    (uids, problems)
}

#[cfg(not(target_os = "macos"))]
fn candidate_uids() -> (Vec<u32>, Vec<Problem>) {
    // Through the one bounded reader, as every file oyster reads.
    let passwd = crate::sys::fs::read_regular(Path::new("/etc/passwd"), 16 << 20)
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|b| b.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound)))
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    match passwd {
        Ok(text) => {
            let lines: String = text
                .lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split(':').collect();
                    Some(format!("{} {}\n", f.first()?, f.get(2)?))
                })
                .collect();
            (parse_accounts(&lines, 1000), vec![])
        }
        Err(e) => (vec![], vec![accounts_unlisted(format!("/etc/passwd: {e}"))]),
    }
}

fn accounts_unlisted(why: String) -> Problem {
    Problem {
        code: "accounts_unlisted",
        fix: super::Fix::AccountsUnlisted.to_string(),
        detail: Some(why),
    }
}

/// The uids from `NAME UID` lines (dscl's listing), from `min` up, without `_` accounts and
/// `nobody` (uid -2 on macOS, 65534 elsewhere).
pub fn parse_accounts(text: &str, min: u32) -> Vec<u32> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?;
            let uid: u32 = words.next()?.parse().ok()?;
            (!name.starts_with('_') && name != "nobody" && uid >= min && uid != 65534)
                .then_some(uid)
        })
        .collect()
}

/// The variables oyster passes to itself run as another user: where launchctl is and how
/// long it may take (a test's simulator, an admin's override), and colour.
const PASSED_ENV: &[&str] = &[
    "OYSTER_MANAGED_PREFERENCES_DIR",
    "OYSTER_LAUNCHCTL",
    "OYSTER_LAUNCHCTL_TIMEOUT_SECS",
    "NO_COLOR",
];

/// One user's part, collected by oyster running as that user (`inventory --user-part`), at
/// most [`USER_TIMEOUT`]; on any failure, the user with the problem.
pub fn part_as(exe: &Path, account: &Account) -> Value {
    match run_as(exe, account) {
        // Who the part is about is root's to say, not the user's process's: a part that
        // named another uid, name or home is corrected to the account it was run as.
        Ok(mut v) => {
            if let Some(o) = v.as_object_mut() {
                o.insert("uid".into(), account.uid.into());
                o.insert("name".into(), account.name.clone().into());
                o.insert("home".into(), account.home.display().to_string().into());
            }
            v
        }
        Err(why) => serde_json::json!({
            "uid": account.uid,
            "name": account.name,
            "home": account.home.display().to_string(),
            "console": console_owner().map(|o| o == account.uid),
            "stacks": [],
            "problems": [Problem {
                code: "user_unreadable",
                fix: super::Fix::AsUser {
                    user: account.name.clone(),
                }
                .to_string(),
                detail: Some(why),
            }],
        }),
    }
}

fn run_as(exe: &Path, account: &Account) -> Result<Value, String> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut c = Command::new(exe);
    c.args(["inventory", "--user-part"])
        .env_clear()
        .env("HOME", &account.home)
        .env("USER", &account.name)
        .env("LOGNAME", &account.name)
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .current_dir("/")
        .uid(account.uid)
        .gid(account.gid)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for k in PASSED_ENV {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    let mut child = c
        .spawn()
        .map_err(|e| format!("could not start oyster as {}: {e}", account.name))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut buf = vec![];
        let _ = (&mut stdout).take(16 << 20).read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + USER_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let Some(status) = status else {
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = child.wait();
        let _ = reader.join();
        return Err(format!(
            "oyster as {} did not finish within {} s and was stopped",
            account.name,
            USER_TIMEOUT.as_secs()
        ));
    };
    let bytes = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("oyster as {} exited with {status}", account.name));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("oyster as {} printed no document: {e}", account.name))
}
