//! Unit tests of the status model: the summary and its words, from facts alone.

use super::*;

fn st() -> AgentStatus {
    AgentStatus {
        stack: "s".into(),
        label: "com.oysterun.host.s".into(),
        port: Some(1),
        url: None,
        summary: Summary::Unknown,
        installed: true,
        loaded: true,
        running: true,
        verified: true,
        broken: false,
        disabled: Some(false),
        login_item: None,
        login_item_why: None,
        state: None,
        pid: Some(7),
        last_exit_code: None,
        last_signal: None,
        runs: None,
        crash_loop: false,
        health: Some(200),
        env_proof: Some(EnvProof::Live),
        env_mismatch: vec![],
        problem: None,
        declared: vec![],
        declared_stale: vec![],
        in_sync: Some(true),
        host_login: None,
        login_user: None,
        installed_by: Some(InstalledBy::Oyster),
        managed_by: None,
        manager: None,
        unit: None,
        plist_path: String::new(),
        log_path: String::new(),
        launchctl: None,
        launchctl_overridden: false,
        domain: None,
        loaded_in: vec![],
        notes: vec![],
        managed: vec![],
        seen: Seen::default(),
    }
}

#[test]
fn the_summary_keeps_the_facts_apart_in_one_word() {
    assert_eq!(summarize(&st()), Summary::Verified);
    let stale = AgentStatus {
        in_sync: Some(false),
        ..st()
    };
    assert_eq!(summarize(&stale), Summary::Stale);
    let sick = AgentStatus {
        verified: false,
        ..st()
    };
    assert_eq!(summarize(&sick), Summary::Unverified);
    let looping = AgentStatus {
        running: false,
        crash_loop: true,
        ..st()
    };
    assert_eq!(summarize(&looping), Summary::CrashLoop);
    let down = AgentStatus {
        running: false,
        ..st()
    };
    assert_eq!(summarize(&down), Summary::NotRunning);
    let stopped = AgentStatus {
        loaded: false,
        running: false,
        disabled: Some(true),
        ..st()
    };
    assert_eq!(summarize(&stopped), Summary::Stopped);
    // Disabled unknown (print-disabled failed) is not "stopped on purpose".
    let unknown = AgentStatus {
        disabled: None,
        ..stopped
    };
    assert_eq!(summarize(&unknown), Summary::NotLoaded);
    let none = AgentStatus {
        installed: false,
        loaded: false,
        running: false,
        ..st()
    };
    assert_eq!(summarize(&none), Summary::NotInstalled);
}

#[test]
fn the_json_words_of_the_kinds_stay_as_documented() {
    let v = serde_json::to_value(AgentStatus {
        managed_by: Some(Manager::Direct),
        installed_by: Some(InstalledBy::Oysterun),
        summary: Summary::CrashLoop,
        ..st()
    })
    .unwrap();
    assert_eq!(
        (
            &v["managed_by"],
            &v["installed_by"],
            &v["summary"],
            &v["env_proof"]
        ),
        (
            &"direct".into(),
            &"oysterun".into(),
            &"crash_loop".into(),
            &"live".into()
        )
    );
}
