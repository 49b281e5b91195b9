//! The sentences are the ones the domain rooms said before they returned facts: pinned here
//! word for word (each expected text is the old `format!` with these values filled in).

use std::path::PathBuf;
use std::time::Duration;

use crate::agent::login_items::{Asked, Unknown};
use crate::agent::refusal::{Cause, Found, NoReason};
use crate::agent::status::StatusNote;
use crate::agent::verbs::{KillRefusal, StopFinished, VerbNote};
use crate::direct::status::NotRunning;
use crate::direct::{Finished, Mismatch, NotThisStacks, NotVerified, Refusal};
use crate::error::Failed;
use crate::launchctl::Domain;

const LABEL: &str = "com.oysterun.host.dev";

#[test]
fn refusal_causes_say_what_holds_and_the_fix() {
    let c = Cause::from(Found::Ownership {
        path: PathBuf::from("/u/LaunchAgents"),
        dir: true,
        uid: 0,
        mode: 0o777,
        me: 501,
    });
    assert_eq!(c.what, "/u/LaunchAgents, the plist's directory, has an owner or mode launchd refuses (owner uid 0, mode 777): it must be yours (uid 501) and not writable by group or others");
    assert_eq!(c.fix, "run `chmod go-w /u/LaunchAgents` (and `chown` it to yourself if it is not yours), then try again");
    let c = Cause::from(Found::Disabled {
        target: format!("gui/501/{LABEL}"),
        domain: Domain::Gui(501),
    });
    assert_eq!(c.what, format!("launchd has gui/501/{LABEL} disabled (`launchctl print-disabled gui/501`), although oyster enabled it just before"));
    assert_eq!(c.fix, format!("run `launchctl enable gui/501/{LABEL}` and try again; if it is disabled again, a configuration profile (MDM) disables it"));
    let c = Cause::from(Found::SwitchedOff {
        program: "/usr/local/bin/oyster".into(),
    });
    assert_eq!(c.what, "the agent is switched off in System Settings → General → Login Items (\"Allow in the Background\"), or was never approved, so launchd will not load it; `launchctl enable` does not change that");
    assert_eq!(c.fix, "open System Settings → General → Login Items, and under \"Allow in the Background\" switch on \"oyster\" (the item is named after the program the agent runs, /usr/local/bin/oyster, or after the developer who signed it); then run the command again");
    let hint = NoReason {
        root_advice: true,
        domain: Domain::Gui(501),
        plist: PathBuf::from("/a b/x.plist"),
        doctor: "oyster doctor".into(),
        admin: false,
    };
    assert_eq!(hint.to_string(), "an administrator can see launchd's own reason with `sudo log show --last 5m --predicate 'process == \"launchd\"'` (`log show` refuses a user who is not one); launchctl's own advice, re-running it as root for a richer error, is `sudo launchctl bootstrap gui/501 '/a b/x.plist'` (also an administrator's); `oyster doctor` checks the rest");
}

#[test]
fn why_login_items_are_unknown() {
    let hung = Unknown::Hung(Asked::Launchctl("/bin/launchctl".into()));
    assert_eq!(
        Unknown::NotAgain(Box::new(hung)).to_string(),
        "/bin/launchctl login-item-status did not answer within 3 s (the Background Task Management daemon behind Login Items may be wedged); not asked again in this run"
    );
    let cannot = Unknown::CannotSay {
        program: "/bin/launchctl".into(),
        code: 64,
        said: Some("usage".into()),
    };
    assert_eq!(
        cannot.to_string(),
        "/bin/launchctl cannot say (`login-item-status` exited 64: usage)"
    );
}

#[test]
fn status_notes() {
    let keychain = StatusNote::Keychain {
        user: Domain::User(501),
        keeping: vec!["Claude", "Codex"],
        restart: "oyster restart".into(),
        gui: Domain::Gui(501),
    };
    assert_eq!(keychain.to_string(), "the Host runs in user/501, a Background session, where the login keychain is locked: a provider that keeps its login there (Claude, Codex) can fail to authenticate although the Host looks healthy; `oyster restart` at the console moves it to gui/501, or log in at the console once");
    let twice = StatusNote::LoadedTwice {
        label: LABEL.into(),
        first: (Domain::Gui(501), Some(7)),
        second: (Domain::User(501), None),
        restart: "oyster restart".into(),
    };
    assert_eq!(twice.to_string(), format!("loaded twice: {LABEL} is loaded in gui/501 (pid 7) and in user/501 (not running), two Hosts for one port; `oyster restart` boots the user/501 copy out (or `launchctl bootout user/501/{LABEL}`)"));
    let off = StatusNote::SwitchedOff {
        found: Found::SwitchedOff {
            program: "/o/oyster".into(),
        },
        loaded: true,
    };
    assert_eq!(off.to_string(), "the agent is switched off in System Settings → General → Login Items (\"Allow in the Background\"): it is loaded now (it was loaded before), but will not be loaded again at the next login, and a change that reloads it (made with a note, since this answer can be wrong for a Host that runs) would leave it down: open System Settings → General → Login Items, and under \"Allow in the Background\" switch on \"oyster\" (the item is named after the program the agent runs, /o/oyster, or after the developer who signed it)");
    let unknown = StatusNote::WhoRunsUnknown {
        systemd: false,
        pid: 9,
    };
    assert_eq!(unknown.to_string(), "launchctl could not be asked, so whether launchd (the LaunchAgent) or `oyster host start` runs this Host (pid 9) is not known");
    let stale = StatusNote::DeclaredStale {
        names: vec!["A".into(), "B".into()],
        restart: "oyster restart dev".into(),
    };
    assert_eq!(
        stale.to_string(),
        "the declared environment changed since this Host started (A, B): `oyster restart dev` applies it"
    );
    let unusable = StatusNote::Unusable {
        why: "x is not writable".into(),
        fix: "chmod it".into(),
    };
    assert_eq!(unusable.to_string(), "x is not writable; fix: chmod it");
}

#[test]
fn the_verbs_say_and_refuse() {
    let stopped = StopFinished::Disabled {
        label: LABEL.into(),
        pid: Some(42),
        plist: "/p.plist".into(),
    };
    assert_eq!(stopped.to_string(), format!("{LABEL} was booted out (launchd finishes stopping pid 42) and disabled, so it stays stopped (also at the next login); kept /p.plist"));
    let warn = VerbNote::NotDisabledAgain {
        label: LABEL.into(),
        why: "exit 5".into(),
        stop: "oyster stop".into(),
    };
    assert_eq!(warn.to_string(), format!("the start failed and {LABEL} could not be disabled again (exit 5): a login may load it; `oyster stop` keeps it stopped"));
    let refused = Failed::from(KillRefusal::LoadedTwice {
        label: LABEL.into(),
        first: (Domain::Gui(501), Some(7)),
        second: (Domain::User(501), None),
        restart: "oyster restart".into(),
    });
    assert_eq!(refused.msg, format!("{LABEL} is loaded twice, in gui/501 (pid 7) and in user/501 (not running): two Hosts for one port, so no Host was signalled"));
    assert_eq!(refused.hint.as_deref(), Some(format!("`oyster restart` boots the user/501 copy out and starts one Host (or `launchctl bootout user/501/{LABEL}`)").as_str()));
    let refused = Failed::from(KillRefusal::NotRunning {
        label: LABEL.into(),
        state: None,
        logs: "oyster logs".into(),
    });
    assert_eq!(refused.msg, format!("{LABEL} is loaded but no Host is running (state = unknown); launchd starts it again by itself"));
}

#[test]
fn the_direct_host_says_and_refuses() {
    let why = NotThisStacks {
        pid: 12,
        stack: "dev".into(),
        why: vec![
            Mismatch::RecordStack("prod".into()),
            Mismatch::EnvNoStack("OYSTER_STACK"),
        ],
    };
    let said = "pid 12 is not stack dev's Host: its exec record names stack \"prod\"; its environment has no OYSTER_STACK (were these identity files copied from another stack's directory?)";
    assert_eq!(why.to_string(), said);
    assert_eq!(NotRunning::OtherStack(why.clone()).to_string(), said);
    let refused = Failed::from(Refusal::OtherStack {
        why,
        stack: "dev".into(),
        files: vec!["/r/host.pid".into(), "/r/exec.json".into()],
    });
    assert_eq!(
        refused.msg,
        format!("{said}; nothing was signalled and no file was removed")
    );
    assert_eq!(refused.hint.as_deref(), Some("if stack dev has no Host of its own running, remove the copied identity files: `rm /r/host.pid /r/exec.json`"));
    let refused = Failed::from(Refusal::Unproven {
        pid: 12,
        server: "/root/host-service/server.mjs".into(),
        recorded: false,
        exec_record: "/r/exec.json".into(),
        stack: "dev".into(),
        start: "oyster host start".into(),
    });
    assert_eq!(refused.msg, "pid 12 runs /root/host-service/server.mjs but has no record of its start in /r/exec.json (another start time, or the record is missing or unreadable); it was not signalled and the identity files were kept");
    assert_eq!(
        refused.hint.as_deref(),
        Some("if it is stack dev's Host, stop it yourself (`kill 12`), then `oyster host start`")
    );
    let refused = Failed::from(Refusal::PortHeld {
        port: 8802,
        pid: 5,
        name: "node".into(),
        stack_of: Some("prod".into()),
        stack: "dev".into(),
    });
    assert_eq!(refused.msg, "port 8802 is already held by pid 5 (node, oyster stack prod); the Host of stack dev could not listen there");
    assert_eq!(
        Finished::StartStopped {
            pid: 3,
            removed: false
        }
        .to_string(),
        "stopped the Host it had started (pid 3, not yet verified) and could not remove its identity files"
    );
    assert_eq!(
        NotVerified::ExitedWhileSettling(Duration::from_millis(1500)).to_string(),
        "the Host exited within 1.5s of answering /health (a crash loop?)"
    );
}
