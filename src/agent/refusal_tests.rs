//! Unit tests of `refusal`.

use super::*;
use crate::output::shell_word;

// The discriminators return facts; the tests read them in words, as the callers do.
fn session_type(d: Domain, p: &Path, regenerate: &str) -> Option<Cause> {
    super::session_type(d, p, regenerate).map(Cause::from)
}
fn log_dir(p: &Path, regenerate: &str) -> Option<Cause> {
    super::log_dir(p, regenerate).map(Cause::from)
}
fn ownership(p: &Path) -> Option<Cause> {
    super::ownership(p).map(Cause::from)
}

fn plist(dir: &Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("com.oysterun.host.t.plist");
    let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>Label</key><string>com.oysterun.host.t</string><key>ProgramArguments</key><array><string>/usr/local/bin/oyster</string></array>{extra}</dict></plist>\n"
        );
    std::fs::write(&p, xml).unwrap();
    p
}

/// Issue 39 item 7: `log show` needs an administrator, so a user who is not one gets the
/// `sudo` form as an administrator's command; launchctl's advice to retry as root, when it
/// gave it, is kept as the command it means (the plist quoted as one word).
#[test]
fn the_no_reason_hint_is_one_a_standard_user_can_follow() {
    let plist = Path::new("/Users/a b/Library/LaunchAgents/com.oysterun.host.plist");
    let five = "Bootstrap failed: 5: Input/output error\nTry re-running the command as root for richer errors.\n";
    let standard = no_reason_hint(five, Domain::Gui(501), plist, "oyster doctor", false);
    assert!(
        standard.starts_with(
            "an administrator can see launchd's own reason with `sudo log show --last 5m"
        ),
        "{standard}"
    );
    assert!(standard.contains("`sudo launchctl bootstrap gui/501 '/Users/a b/Library/LaunchAgents/com.oysterun.host.plist'` (also an administrator's)"), "{standard}");
    assert!(
        standard.ends_with("; `oyster doctor` checks the rest"),
        "{standard}"
    );
    let admin = no_reason_hint(five, Domain::Gui(501), plist, "oyster doctor", true);
    assert!(admin.starts_with("`log show --last 5m"), "{admin}");
    assert!(!admin.contains("also an administrator's"), "{admin}");
    // As root launchctl gives no such advice, and none is made up.
    let root = no_reason_hint(
        "Bootstrap failed: 5: Input/output error\n",
        Domain::Gui(501),
        plist,
        "oyster doctor",
        true,
    );
    assert!(!root.contains("launchctl bootstrap"), "{root}");
    assert_eq!(shell_word("it's"), "'it'\\''s'");
}

#[test]
fn session_types_are_read_as_launchd_reads_them() {
    let d = tempfile::tempdir().unwrap();
    let gui = Domain::Gui(501);
    let user = Domain::User(501);
    // None: Aqua only, refused in user/<uid>.
    let p = plist(d.path(), "");
    assert!(session_type(gui, &p, "R").is_none());
    let c = session_type(user, &p, "R").unwrap();
    assert!(
        c.what.contains("(Aqua) does not include Background"),
        "{c:?}"
    );
    assert!(c.fix.contains("`R`"));
    // A one-string value, and an array.
    let p = plist(
        d.path(),
        "<key>LimitLoadToSessionType</key><string>Background</string>",
    );
    assert!(session_type(gui, &p, "R").is_some());
    assert!(session_type(user, &p, "R").is_none());
    let p = plist(d.path(), "<key>LimitLoadToSessionType</key><array><string>Aqua</string><string>Background</string></array>");
    assert!(session_type(gui, &p, "R").is_none() && session_type(user, &p, "R").is_none());
}

#[test]
fn a_missing_log_directory_is_named_with_its_fix() {
    let d = tempfile::tempdir().unwrap();
    let logs = d.path().join("logs");
    let p = plist(
        d.path(),
        &format!(
            "<key>StandardOutPath</key><string>{}/host.log</string>",
            logs.display()
        ),
    );
    let c = log_dir(&p, "R").unwrap();
    assert!(c.what.contains("does not exist"), "{c:?}");
    assert!(c.fix.contains("mkdir -p"), "{c:?}");
    std::fs::write(&logs, "").unwrap();
    assert!(log_dir(&p, "R")
        .unwrap()
        .what
        .contains("is not a directory"));
    std::fs::remove_file(&logs).unwrap();
    std::fs::create_dir(&logs).unwrap();
    assert!(log_dir(&p, "R").is_none());
}

#[test]
fn a_group_writable_plist_or_directory_is_named() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = plist(d.path(), "");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(ownership(&p).is_none());
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).unwrap();
    assert!(ownership(&p).unwrap().what.contains("mode 664"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(ownership(&p)
        .unwrap()
        .what
        .contains("the plist's directory"));
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
}
