//! The seams, round 4 (issue 40), item 1: root's uninstall (and postinstall) never acts on what
//! a user names. The .pkg's scripts run against the recording fakes of `common::pkg`, with real
//! separate uids: each account's home, `~/Library/LaunchAgents` and plists belong to its uid
//! (501, 502; no account on the test machine has them), and the fake `sudo` really switches to
//! that uid (`setpriv`), so a user's file is read and removed with that user's rights only.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::pkg::{Outcome, Pkg};

/// A Pkg whose homes belong to their accounts' uids, reachable by them, and whose fakes may be
/// run by them (the calls log is everyone's).
fn real_uids() -> Pkg {
    crate::common::need_root();
    let p = Pkg::new();
    p.install_payload();
    crate::fleet_pkg::dscl_lists(&p, &[("alice", 501), ("asmith", 502)]);
    for dir in [p.t.dir.path(), &p.t.path("Users"), &p.t.path("Network")] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for a in &p.accounts {
        let library = a.home.join("Library");
        std::fs::create_dir_all(library.join("LaunchAgents")).unwrap();
        for d in [&a.home, &library, &library.join("LaunchAgents")] {
            crate::root_never_steered::lchown(d, a.uid);
        }
    }
    p
}

/// `sudo oyster-uninstall ARGS` with the fake sudo switching uids for real.
fn uninstall(p: &Pkg, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    std::fs::write(&p.log, "").unwrap();
    std::fs::set_permissions(&p.log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut all = vec![("FAKE_SUDO_REAL_UIDS", "1")];
    all.extend_from_slice(env);
    p.uninstall_with(args, Some("alice"), &all)
}

/// A plist at `path` (owned by `uid`) for `label`, whose program is an oyster.
fn plist_at(path: &Path, label: &str, uid: u32) -> PathBuf {
    let mut top = plist::Dictionary::new();
    top.insert("Label".into(), label.into());
    top.insert(
        "ProgramArguments".into(),
        plist::Value::Array(vec!["/usr/local/bin/oyster".into()]),
    );
    plist::Value::Dictionary(top).to_file_xml(path).unwrap();
    crate::root_never_steered::lchown(path, uid);
    path.to_owned()
}

fn launchctl_calls(o: &Outcome) -> Vec<&String> {
    o.calls.iter().filter(|c| c.starts_with("launchctl")).collect()
}

/// A file name holding a line break and tabs cannot add a record to root's plan: the forged
/// "A\tme\t502\tLABEL" line is neither listed nor acted on (nothing asked of launchd outside
/// alice's own domains), the name is refused, shown escaped. A plist in alice's folder that
/// another uid owns, a FIFO, a link to another user's plist and a plist whose Label is not its
/// name are left alone, named; alice's own agent is removed, as alice.
#[test]
#[ignore = "needs root: homes of real separate uids (.ci/run runs it)"]
fn a_root_uninstall_acts_only_on_checked_names_in_the_owners_own_domains() {
    let p = real_uids();
    let agents = p.agents_dir("alice");
    let alice = p.agent_running("alice", "com.oysterun.host", "/usr/local/bin/oyster");
    // asmith's own plist (another installer's: nothing of asmith's is to be removed).
    let theirs = p.agent_running("asmith", "com.oysterun.host", "/bin/bash");
    let forged_name = "com.oysterun.host.x\nA\tme\t502\tcom.victim.job\nZ.plist";
    let forged = plist_at(&agents.join(forged_name), "com.oysterun.host.x", 501);
    let foreign =
        plist_at(&agents.join("com.oysterun.host.dev.plist"), "com.oysterun.host.dev", 502);
    let fifo = agents.join("com.oysterun.host.fifo.plist");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    crate::root_never_steered::lchown(&fifo, 501);
    let link = agents.join("com.oysterun.host.link.plist");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    crate::root_never_steered::lchown(&link, 501);
    let renamed = plist_at(&agents.join("com.oysterun.host.qa.plist"), "com.apple.qa", 501);

    // The listing the admin is asked about: alice's agent, and no forged line.
    let o = uninstall(&p, &[], &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains(&format!("alice's LaunchAgent {}", alice.display())), "{}", o.out);
    assert!(!o.out.contains("me's LaunchAgent"), "{}", o.out);
    for line in o.out.lines() {
        assert!(
            line.starts_with("oyster-uninstall: ") || line.starts_with("  - "),
            "a line not the script's own: {line:?}\n{}",
            o.out
        );
    }
    assert!(
        o.out.contains("refused ")
            && o.out.contains("com.oysterun.host.x\\nA\\tme\\t502\\tcom.victim.job\\nZ.plist")
            && o.out.contains("its name holds a control character"),
        "{}",
        o.out
    );

    let start = Instant::now();
    let o = uninstall(&p, &["--yes"], &[]);
    assert!(start.elapsed() < Duration::from_secs(60), "a FIFO held it up");
    assert_eq!(o.code, 0, "{}", o.out);
    for c in launchctl_calls(&o) {
        let own = c.contains("/501/") || c.contains("gui/502/com.oysterun.oyster.login ");
        assert!(
            own && !c.contains("victim") && !c.contains("com.apple"),
            "launchd asked outside alice's own domains: {c}\n{:#?}",
            o.calls
        );
    }
    assert!(o.calls.contains(&"launchctl bootout gui/501/com.oysterun.host as=root".to_owned()));
    assert!(!alice.exists(), "{}", o.out);
    assert!(o.calls.iter().any(|c| c.starts_with("sudo -u alice -H /bin/rm -f ")
        && c.ends_with("com.oysterun.host.plist as=root")));
    for (kept, why) in [
        (&foreign, "it belongs to uid 502, not alice (uid 501)"),
        (&fifo, "not a regular file"),
        (&link, "not a regular file"),
        (&renamed, "its Label is 'com.apple.qa'"),
    ] {
        assert!(std::fs::symlink_metadata(kept).is_ok(), "{} was removed", kept.display());
        assert!(o.out.contains(why), "missing {why:?}:\n{}", o.out);
    }
    assert!(forged.exists() && theirs.exists(), "{}", o.out);
    // The plists were read as alice, never as root.
    for c in o.calls.iter().filter(|c| c.starts_with("plutil -extract ProgramArguments")) {
        assert!(c.ends_with(" as=alice") || c.ends_with(" as=asmith"), "{c}");
    }
}

/// The plan is made before the question and carried out after it: alice swapping her
/// `~/Library/LaunchAgents` for a link to asmith's in between redirects nothing. Her item is
/// checked again, left alone, said; asmith's plist and job are untouched.
#[test]
#[ignore = "needs root: homes of real separate uids (.ci/run runs it)"]
fn a_root_uninstall_checks_each_item_again_after_the_question() {
    let p = real_uids();
    let alice = p.agent_running("alice", "com.oysterun.host", "/usr/local/bin/oyster");
    // asmith's agent is not oyster's, so nothing of asmith's is in the plan at all.
    let theirs = p.agent_running("asmith", "com.oysterun.host", "/bin/bash");
    let agents = p.agents_dir("alice");
    let hook = format!(
        "mv {a} {a}.moved && ln -s {b} {a}",
        a = crate::common::pkg::sh_quote(&agents.display().to_string()),
        b = crate::common::pkg::sh_quote(&p.agents_dir("asmith").display().to_string()),
    );
    let o = uninstall(&p, &["--yes"], &[("FAKE_PKGUTIL_HOOK", &hook)]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(theirs.exists(), "asmith's plist was removed:\n{}", o.out);
    assert!(agents.with_extension("moved").join("com.oysterun.host.plist").exists(), "{}", o.out);
    assert!(!o.calls.iter().any(|c| c.contains("/502/com.oysterun.host ")), "{:#?}", o.calls);
    assert!(
        o.out.contains("is not a directory (a link, or gone)")
            && o.out.contains(&format!(
                "{} was not removed: it changed after it was listed",
                alice.display()
            )),
        "{}",
        o.out
    );
}

/// Processes stopped (state T) that a test's fakes started: none may be left.
fn stopped_under(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let state = stat.rsplit_once(") ").map(|(_, r)| r.chars().next());
        if state == Some(Some('T')) && cmd.contains(&dir.display().to_string()) {
            out.push(cmd);
        }
    }
    out
}

/// A user who stops their own process (here alice's plist reader, run as alice) ends only
/// alice's part of the uninstall, after the bound, said with what alice should run: the rest
/// goes on (asmith's agent, the payload), and nothing is left stopped.
#[test]
#[ignore = "needs root: homes of real separate uids (.ci/run runs it)"]
fn a_root_uninstall_bounds_each_users_part_in_time() {
    let p = real_uids();
    let alice = p.agent_running("alice", "com.oysterun.host", "/usr/local/bin/oyster");
    let asmith = p.agent_running("asmith", "com.oysterun.host", "/usr/local/bin/oyster");
    let start = Instant::now();
    let o =
        uninstall(&p, &["--yes"], &[("OYSTER_PKG_USER_SECS", "3"), ("FAKE_PLUTIL_STOP", "alice")]);
    assert!(start.elapsed() < Duration::from_secs(30), "{}", o.out);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(
        o.out.contains("looking at alice's LaunchAgents did not finish in 3 s")
            && o.out.contains("as alice, run: oyster agent uninstall --all"),
        "{}",
        o.out
    );
    assert!(alice.exists() && !asmith.exists(), "{}", o.out);
    assert!(!p.sys.join("Library/Oysterun/bin/oyster").exists());
    assert_eq!(stopped_under(&p.sys), Vec::<String>::new());
}

/// The postinstall too: alice stopping the oyster that runs as her ends her turn after the
/// bound, said; asmith (switched away) is still served, and the install succeeds.
#[test]
#[ignore = "needs root: a process of a real separate uid (.ci/run runs it)"]
fn a_root_postinstall_bounds_each_users_turn_in_time() {
    let p = real_uids();
    p.write_oyster("[ \"${RUN_AS:-}\" = alice ] && kill -STOP $$\n");
    std::fs::set_permissions(p.dest.join("Library"), std::fs::Permissions::from_mode(0o755)).ok();
    let node = p.brew_node();
    for a in ["alice", "asmith"] {
        let agent = p.install_agent(a, &node);
        p.owned_by(a, &agent);
    }
    let ps = "echo 'alice /System/Library/CoreServices/loginwindow.app/Contents/MacOS/loginwindow'\n\
              echo 'asmith /System/Library/CoreServices/loginwindow.app/Contents/MacOS/loginwindow'";
    crate::common::pkg::script(&p.sys.join("bin/ps"), ps);
    std::fs::write(&p.log, "").unwrap();
    std::fs::set_permissions(&p.log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let start = Instant::now();
    let o = p.run(Some("alice"), &[("OYSTER_PKG_USER_SECS", "3"), ("FAKE_SUDO_REAL_UIDS", "1")]);
    assert!(start.elapsed() < Duration::from_secs(30), "{}", o.out);
    assert_eq!(o.code, 0, "{}", o.out);
    assert!(
        o.out.contains("alice's turn did not finish in 3 s")
            && o.out.contains("run as alice (in Terminal, without sudo): oyster agent regenerate"),
        "{}",
        o.out
    );
    assert!(
        o.oyster_calls()
            .iter()
            .any(|c| c.starts_with("oyster agent regenerate") && c.contains("as=asmith")),
        "{:#?}",
        o.calls
    );
    assert_eq!(stopped_under(&p.dest), Vec::<String>::new());
}

/// The postinstall reads a user's plist as that user, never with root's eyes: alice's
/// `com.oysterun.host.plist` is a link to a plist only root may read, whose pinned Node root
/// would have said in install.log ("the installed agent's Node (…) is gone"). And a file in
/// her folder named to forge a line of install.log is said escaped, as no stack.
#[test]
#[ignore = "needs root: homes of real separate uids (.ci/run runs it)"]
fn a_root_postinstall_reads_a_users_plist_as_the_user_and_says_no_forged_line() {
    let p = real_uids();
    std::fs::set_permissions(p.dest.join("Library"), std::fs::Permissions::from_mode(0o755)).ok();
    p.brew_node();
    let secret = p.t.path("root-only.plist");
    p.install_agent("alice", Path::new("/ROOT-ONLY-SECRET/node"));
    std::fs::rename(p.agents_dir("alice").join("com.oysterun.host.plist"), &secret).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = p.agents_dir("alice").join("com.oysterun.host.plist");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    crate::root_never_steered::lchown(&link, 501);
    let forged = "com.oysterun.host.x\noyster postinstall: done: FORGED.plist";
    plist_at(&p.agents_dir("alice").join(forged), "com.oysterun.host.x", 501);
    std::fs::write(&p.log, "").unwrap();
    std::fs::set_permissions(&p.log, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = p.run(Some("alice"), &[("FAKE_SUDO_REAL_UIDS", "1")]);
    assert_eq!(o.code, 0, "{}", o.out);
    assert!(!o.out.contains("ROOT-ONLY-SECRET"), "{}", o.out);
    for c in o.calls.iter().filter(|c| c.starts_with("plutil -extract Env")) {
        assert!(c.ends_with(" as=alice"), "root read a user's plist: {c}");
    }
    for line in o.out.lines() {
        assert!(
            line.starts_with("oyster postinstall: "),
            "a line not the script's own: {line:?}\n{}",
            o.out
        );
    }
    assert!(
        o.out.contains(
            "com.oysterun.host.x\\noyster postinstall: done: FORGED.plist: not a stack's"
        ),
        "{}",
        o.out
    );
}

/// The package's files are root's: the user who owns `/usr/local/bin` (Homebrew's on an Intel
/// Mac) makes it a link to another user's folder holding that user's own `oyster` and
/// `oyster-uninstall`. Root removes neither (they belong to uid 502, so the package did not
/// install them), says so, and removes the rest of the payload; before, root removed them
/// through the link.
#[test]
#[ignore = "needs root: files of real separate uids (.ci/run runs it)"]
fn a_root_uninstall_removes_only_roots_files_at_the_packages_names() {
    let p = real_uids();
    let bin = p.home("asmith").join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    crate::root_never_steered::lchown(&bin, 502);
    for name in ["oyster", "oyster-uninstall"] {
        std::fs::write(bin.join(name), "asmith's own").unwrap();
        crate::root_never_steered::lchown(&bin.join(name), 502);
    }
    let usr_bin = p.sys.join("usr/local/bin");
    std::fs::remove_dir_all(&usr_bin).unwrap();
    std::os::unix::fs::symlink(&bin, &usr_bin).unwrap();
    crate::root_never_steered::lchown(&usr_bin, 501);
    let o = uninstall(&p, &["--yes"], &[]);
    assert_eq!(o.code, 0, "{}", o.out);
    for name in ["oyster", "oyster-uninstall"] {
        assert_eq!(std::fs::read_to_string(bin.join(name)).unwrap(), "asmith's own", "{}", o.out);
        assert!(
            o.out.contains(&format!("kept /usr/local/bin/{name}: it belongs to uid 502, not root")),
            "{}",
            o.out
        );
    }
    assert!(!p.sys.join("Library/Oysterun/bin/oyster").exists(), "{}", o.out);
    assert!(!p.sys.join("usr/local/share/man/man1/oyster.1").exists());
}
