//! Fleets of Macs (issue 32), the `.pkg` side: the postinstall serves every logged-in user
//! (fast user switching), the login step serves the others at their next login, and
//! `oyster-uninstall` removes every user's Oysterun LaunchAgents. Run on Linux against the
//! recording fakes of `common::pkg`, plus a fake `ps` and a `dscl` that lists accounts.

use std::path::PathBuf;
use std::process::Command;

use crate::common::has_all;
use crate::common::pkg::{
    assert_oyster_never_acts_as_root, script, sh_quote, w, Outcome, Pkg, PKG_FILES,
};
use crate::common::repo::{repo, VERSION};

const LOGINWINDOW: &str = "/System/Library/CoreServices/loginwindow.app/Contents/MacOS/loginwindow";

/// A fake `/bin/ps` answering `ps -axo user=,comm=` with `lines` (as macOS prints it: the
/// owner, then the executable's path), logging its call.
fn fake_ps(p: &Pkg, lines: &[(&str, &str)]) {
    let mut body = format!("{}log ps \"$@\"\n", p.logger());
    body += "[ \"$*\" = '-axo user=,comm=' ] || { echo 'fake ps: unexpected arguments' >&2; exit 64; }\n";
    for (user, comm) in lines {
        body += &format!("printf '%s %s\\n' {} {}\n", sh_quote(user), sh_quote(comm));
    }
    script(&p.sys.join("bin/ps"), &body);
}

/// `dscl . -list /Users UniqueID` answered with `accounts` (NAME UID, as dscl prints them);
/// every other call goes to `common::pkg`'s fake.
pub(crate) fn dscl_lists(p: &Pkg, accounts: &[(&str, i64)]) {
    let dscl = p.sys.join("usr/bin/dscl");
    let real = p.sys.join("usr/bin/dscl-read");
    if !real.exists() {
        std::fs::rename(&dscl, &real).unwrap();
    }
    let mut list = String::new();
    for (name, uid) in accounts {
        list += &format!("printf '%-24s %s\\n' {} {uid}\n", sh_quote(name));
    }
    script(
        &dscl,
        &format!(
            "if [ \"$1 $2 $3 $4\" = '. -list /Users UniqueID' ]; then\n{}log dscl \"$@\"\n{list}exit 0\nfi\nexec {} \"$@\"",
            p.logger(),
            sh_quote(&real.display().to_string())
        ),
    );
}

fn calls_as<'a>(o: &'a Outcome, who: &str) -> Vec<&'a str> {
    o.oyster_calls().into_iter().filter(|c| c.contains(&format!(" as={who} "))).collect()
}

#[test]
fn postinstall_acts_for_exactly_the_users_logged_in_with_fast_user_switching() {
    let p = Pkg::new();
    let node = p.brew_node();
    // alice is at the console, asmith switched away (both logged in, each with a
    // loginwindow); bob has an agent installed and sits at the login window, whose loginwindow
    // is root's; bob's SSH session owns processes but no loginwindow.
    p.install_agent("asmith", &node);
    let bob_plist = p.install_agent("bob", &node);
    fake_ps(
        &p,
        &[
            ("root", "/sbin/launchd"),
            ("root", LOGINWINDOW),
            ("alice", LOGINWINDOW),
            ("alice", "/Applications/Safari.app/Contents/MacOS/Safari"),
            ("asmith", LOGINWINDOW),
            ("asmith", "/usr/libexec/loginwindow-helper"),
            ("_mbsetupuser", LOGINWINDOW),
            ("bob", "/usr/sbin/sshd"),
            ("bob", "-zsh"),
        ],
    );
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&[
        "as alice (uid 501) in gui/501: oyster agent install",
        "done: oyster agent install succeeded for alice",
        "as asmith (uid 502) in gui/502: oyster agent regenerate",
        "done: oyster agent regenerate succeeded for asmith",
        "users not logged in now get 'oyster agent regenerate' at their next login",
    ]);
    let launchctl: Vec<&String> = o.calls.iter().filter(|c| c.starts_with("launchctl ")).collect();
    assert_eq!(launchctl.len(), 2, "{launchctl:#?}");
    assert!(launchctl[0].starts_with("launchctl asuser 501 "), "{launchctl:#?}");
    assert!(launchctl[1].starts_with("launchctl asuser 502 "), "{launchctl:#?}");
    // alice's whole turn, then asmith's: the same steps as for the console user alone.
    let mut want = p.agent_calls("alice", "install", &format!(" --node-bin {}", w(&node)));
    want.retain(|c| c.starts_with("oyster "));
    assert_eq!(calls_as(&o, "alice"), want);
    assert_eq!(calls_as(&o, "asmith").len(), 2, "{:#?}", o.calls);
    assert!(calls_as(&o, "bob").is_empty(), "{:#?}", o.calls);
    assert!(
        !o.calls.iter().any(|c| c.contains("/Users/bob") || c.contains(" bob ")),
        "nothing is looked up for bob: {:#?}",
        o.calls
    );
    assert!(bob_plist.exists());
    assert_oyster_never_acts_as_root(&o);

    // One user's failure is logged and the next user is still served; the install succeeds.
    p.write_oyster(
        "[ \"${RUN_AS:-}\" = alice ] && [ \"$1 ${2:-}\" = 'agent install' ] && exit 3\n",
    );
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&[
        "oyster agent install for alice did not succeed (exit 3",
        "run as alice (in Terminal, without sudo): oyster agent install",
        "done: oyster agent regenerate succeeded for asmith",
    ]);

    // At the login window (the console is root's) only the users switched away are served.
    let o = p.run(Some("root"), &[]);
    o.exits_0_saying(&["succeeded for asmith"]);
    assert!(!o.out.contains("nobody is logged in"), "{}", o.out);

    // ps failing: the console user alone, said.
    script(&p.sys.join("bin/ps"), "echo 'ps: sysctl: Operation not permitted' >&2; exit 1");
    let o = p.run(Some("asmith"), &[]);
    o.exits_0_saying(&["ps failed", "succeeded for asmith"]);
    assert!(calls_as(&o, "alice").is_empty(), "{:#?}", o.calls);
}

fn login_log(p: &Pkg, user: &str) -> String {
    std::fs::read_to_string(p.home(user).join("Library/Logs/oyster-login.log")).unwrap_or_default()
}

fn stamp(p: &Pkg, user: &str) -> PathBuf {
    p.home(user).join("Library/Application Support/oyster/login-regenerated")
}

#[test]
fn the_login_step_regenerates_once_per_version_and_again_after_a_failure() {
    let p = Pkg::new();
    // The package's oyster, where the login step runs it (/Library/Oysterun/bin/oyster).
    let installed = p.sys.join("Library/Oysterun/bin/oyster");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::fs::copy(p.oyster(), &installed).unwrap();
    let oyster = "/usr/local/bin/oyster";
    p.agent_running("bob", "com.oysterun.host", oyster);
    p.agent_running("bob", "com.oysterun.host.dev", oyster);
    let home = w(&p.home("bob"));

    let o = p.login("bob", &[]);
    assert_eq!(o.code, 0);
    assert!(o.out.is_empty(), "it writes only to its log: {}", o.out);
    assert_eq!(
        o.oyster_calls(),
        [
            format!("oyster --version as=bob home={home}"),
            format!("oyster agent regenerate as=bob home={home}"),
        ]
    );
    let log = login_log(&p, "bob");
    has_all(&log, &["oyster agent regenerate succeeded"]);
    has_all(&log, &["oyster agent regenerate --stack dev"]);
    assert_eq!(std::fs::read_to_string(stamp(&p, "bob")).unwrap(), format!("oyster {VERSION}\n"));
    // The next login: this version is done.
    let o = p.login("bob", &[]);
    assert_eq!(o.oyster_calls(), [format!("oyster --version as=bob home={home}")]);
    // An upgrade (another version in the stamp): once more.
    std::fs::write(stamp(&p, "bob"), "oyster 0.0.1\n").unwrap();
    let o = p.login("bob", &[]);
    assert_eq!(o.oyster_calls().len(), 2, "{:#?}", o.calls);

    // A failure leaves no stamp: the next login tries again.
    p.agent_running("alice", "com.oysterun.host", oyster);
    let o = p.login("alice", &[("FAKE_OYSTER_EXIT", "1")]);
    assert_eq!(o.code, 0);
    assert!(!stamp(&p, "alice").exists());
    assert!(login_log(&p, "alice").contains("failed (exit 1)"));
    let o = p.login("alice", &[]);
    assert_eq!(o.oyster_calls().len(), 2, "{:#?}", o.calls);
    assert!(stamp(&p, "alice").exists());

    // Another installer's plist is not oyster's to regenerate; a user without any: nothing.
    p.agent_running("asmith", "com.oysterun.host", "/bin/bash");
    let o = p.login("asmith", &[]);
    assert_eq!(o.oyster_calls().len(), 1, "{:#?}", o.calls);
    assert!(login_log(&p, "asmith").contains("not oyster; left alone"));

    // The LaunchAgent that runs it: per user, at login, in the Aqua session, once.
    let plist = crate::common::plistlib(
        &std::fs::read(repo().join("packaging/pkg/com.oysterun.oyster.login.plist")).unwrap(),
    );
    assert_eq!(plist["Label"], "com.oysterun.oyster.login");
    assert_eq!(plist["ProgramArguments"][0], "/usr/local/libexec/oyster-login");
    assert_eq!(plist["RunAtLoad"], true);
    assert_eq!(plist["LimitLoadToSessionType"], "Aqua");
    assert!(plist.get("KeepAlive").is_none());
}

/// What the package installs beyond `common::pkg`'s PKG_FILES: the login step and its agent.
const LOGIN_FILES: &[&str] =
    &["Library/LaunchAgents/com.oysterun.oyster.login.plist", "usr/local/libexec/oyster-login"];

#[test]
fn oyster_uninstall_removes_every_local_users_agents_asking_first_and_keeps_data_unless_purged() {
    let p = Pkg::new();
    p.install_payload();
    for rel in LOGIN_FILES {
        let f = p.sys.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, "payload").unwrap();
    }
    let receipt: Vec<&str> = PKG_FILES.iter().chain(LOGIN_FILES).copied().collect();
    std::fs::write(p.sys.join("receipt.txt"), receipt.join("\n") + "\n").unwrap();
    // The MDM runs it at the login window: nobody at the console; two local accounts with
    // stacks, service accounts and daemons listed too.
    dscl_lists(
        &p,
        &[
            ("_spotlight", 89),
            ("alice", 501),
            ("asmith", 502),
            ("daemon", 1),
            ("nobody", -2),
            ("root", 0),
        ],
    );
    let oyster = "/usr/local/bin/oyster";
    let alice = p.agent_running("alice", "com.oysterun.host", oyster);
    let alice_dev = p.agent_running("alice", "com.oysterun.host.dev", oyster);
    let asmith = p.agent_running("asmith", "com.oysterun.host", "/opt/homebrew/bin/oyster");
    let theirs = p.agent_running("asmith", "com.oysterun.host.legacy", "/bin/bash");
    let config = p.home("alice").join(".oysterun/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "{}").unwrap();
    let stamp_file = stamp(&p, "asmith");
    std::fs::create_dir_all(stamp_file.parent().unwrap()).unwrap();
    std::fs::write(&stamp_file, "oyster 0.1.0\n").unwrap();

    // No terminal and no --yes: the list, and nothing removed.
    let o = p.uninstall_with(&[], None, &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    for want in [
        "alice's LaunchAgent",
        "asmith's LaunchAgent",
        "com.oysterun.host.dev.plist",
        "run: sudo oyster-uninstall --yes",
        "keeps every user's Oysterun config",
    ] {
        assert!(o.out.contains(want), "missing {want:?} in:\n{}", o.out);
    }
    assert!(!o.calls.iter().any(|c| c.starts_with("launchctl")), "{:#?}", o.calls);
    assert!(alice.exists() && asmith.exists() && p.sys.join(LOGIN_FILES[1]).exists());
    p.uninstall_with(&["--bogus"], None, &[]);
    assert!(alice.exists());

    let o = p.uninstall_with(&["--yes"], None, &[]);
    o.exits_0_saying(&["done: oyster is uninstalled.", "kept alice's Oysterun config"]);
    for (uid, job) in
        [(501, "com.oysterun.host"), (501, "com.oysterun.host.dev"), (502, "com.oysterun.host")]
    {
        for domain in ["gui", "user"] {
            let call = format!("launchctl bootout {domain}/{uid}/{job} as=root");
            assert!(o.calls.contains(&call), "{call}: {:#?}", o.calls);
        }
    }
    for uid in [501, 502] {
        let call = format!("launchctl bootout gui/{uid}/com.oysterun.oyster.login as=root");
        assert!(o.calls.contains(&call), "{call}: {:#?}", o.calls);
    }
    assert!(!alice.exists() && !alice_dev.exists() && !asmith.exists(), "{}", o.out);
    assert!(theirs.exists(), "another installer's plist stays");
    assert!(!stamp_file.exists(), "the login step's stamp goes");
    assert!(config.exists(), "the user's config stays");
    for rel in LOGIN_FILES {
        assert!(!p.sys.join(rel).exists(), "{rel}");
    }
    // Only accounts from uid 500 up: no lookup for daemon, nobody, root or _spotlight.
    for other in ["daemon", "nobody", "_spotlight", "/Users/root"] {
        assert!(
            !o.calls.iter().any(|c| c.contains(other) && !c.starts_with("dscl . -list")),
            "{other}: {:#?}",
            o.calls
        );
    }

    // --purge: the data too, the stacks' lock files (outside the stacks) with it.
    p.install_payload();
    let support = p.home("alice").join("Library/Application Support/oyster");
    std::fs::create_dir_all(support.join("locks")).unwrap();
    std::fs::write(support.join("locks/com.oysterun.host.lock"), "").unwrap();
    let o = p.uninstall_with(&["--yes", "--purge"], None, &[]);
    assert_eq!(o.code, 0, "{}", o.out);
    assert!(!config.exists() && !p.home("alice").join(".oysterun").exists(), "{}", o.out);
    assert!(!support.exists(), "the lock files stay: {}", o.out);
}

/// Runs oyster-uninstall on a pseudo-terminal (Python's pty), answering its question with
/// `answer`; returns the exit code and what it printed.
fn uninstall_on_a_terminal(p: &Pkg, answer: &str) -> (i32, String) {
    let helper = r#"
import os, pty, sys
script, answer = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execve("/bin/sh", ["/bin/sh", script], {
        "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/var/root",
        "OYSTER_PKG_SYSROOT": os.environ["SYSROOT"]})
out = b""
answered = False
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
    if not answered and b"[y/N]" in out:
        os.write(fd, answer.encode() + b"\n")
        answered = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let out = Command::new("python3")
        .args(["-c", helper])
        .arg(repo().join("packaging/pkg/oyster-uninstall"))
        .arg(answer)
        .env("SYSROOT", &p.sys)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&p.log);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn oyster_uninstall_on_a_terminal_asks_and_a_no_removes_nothing() {
    let p = Pkg::new();
    p.install_payload();
    dscl_lists(&p, &[("alice", 501)]);
    let agent = p.agent_running("alice", "com.oysterun.host", "/usr/local/bin/oyster");
    let (code, out) = uninstall_on_a_terminal(&p, "n");
    assert_eq!(code, 0, "{out}");
    has_all(&out, &["remove all of this? [y/N]", "nothing was removed."]);
    assert!(agent.exists() && p.sys.join("usr/local/bin/oyster").exists());
    let (code, out) = uninstall_on_a_terminal(&p, "y");
    assert_eq!(code, 0, "{out}");
    has_all(&out, &["done: oyster is uninstalled."]);
    assert!(!agent.exists() && !p.sys.join("usr/local/bin/oyster").exists());
}
