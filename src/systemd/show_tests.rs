//! `show` parsed from real captures (tests/fixtures/systemd/README.md says where and how).

use super::*;
use std::path::Path;

fn fixture(name: &str) -> UnitShow {
    let text = match name {
        "running" => include_str!("../../tests/fixtures/systemd/show-running.txt"),
        "stopped" => include_str!("../../tests/fixtures/systemd/show-stopped.txt"),
        "start-limit" => include_str!("../../tests/fixtures/systemd/show-start-limit.txt"),
        "not-found" => include_str!("../../tests/fixtures/systemd/show-not-found.txt"),
        "drop-in" => include_str!("../../tests/fixtures/systemd/show-drop-in-needs-reload.txt"),
        "all" => include_str!("../../tests/fixtures/systemd/show-running-all.txt"),
        _ => unreachable!(),
    };
    UnitShow::parse(text).unwrap()
}

#[test]
fn a_running_unit_has_its_main_pid_invocation_and_file() {
    let s = fixture("running");
    assert!(s.is_running(), "{s:?}");
    assert_eq!(s.main_pid, Some(29266));
    assert_eq!(s.exec_main_pid, Some(29266));
    assert_eq!(s.result, UnitResult::Success);
    assert_eq!(s.n_restarts, 0);
    assert_eq!(
        s.invocation_id.as_deref(),
        Some("06ae573a90ef41378685fea86028194a")
    );
    assert!(!s.need_daemon_reload);
    assert!(s.is_enabled());
    assert_eq!(
        s.fragment_path,
        Some(PathBuf::from(
            "/tmp/um1/home/.config/systemd/user/oyster-cap-run.service"
        ))
    );
    assert!(s.drop_in_paths.is_empty());
    assert_eq!(
        s.raw.len(),
        PROPERTIES.len(),
        "every property asked came back"
    );
}

#[test]
fn a_stopped_unit_is_inactive_dead_with_no_main_pid() {
    let s = fixture("stopped");
    assert!(!s.is_running());
    assert_eq!(s.active_state, ActiveState::Inactive);
    assert_eq!(s.sub_state, "dead");
    assert_eq!((s.main_pid, s.invocation_id.as_deref()), (None, None));
    assert_eq!(s.result, UnitResult::Success);
    assert_eq!(s.load_state, LoadState::Loaded);
}

#[test]
fn a_crash_loop_past_its_start_limit_is_failed_with_its_last_exit() {
    let s = fixture("start-limit");
    assert!(s.is_failed(), "{s:?}");
    assert_eq!(s.sub_state, "failed");
    // systemd keeps the first failure's result: exit-code, not start-limit-hit (measured).
    assert_eq!(s.result, UnitResult::ExitCode);
    assert_eq!(s.n_restarts, 3);
    assert_eq!(s.main_pid, None);
    assert_eq!(s.exec_main_pid, Some(27772));
    assert_eq!(
        (s.exec_main_code, s.exec_main_status),
        (MainCode::Exited, 1)
    );
    assert_eq!(s.unit_file_state.as_deref(), Some("disabled"));
}

#[test]
fn an_unknown_unit_is_an_answer_not_found_not_an_error() {
    let s = fixture("not-found");
    assert!(s.is_not_found());
    assert_eq!(s.active_state, ActiveState::Inactive);
    assert_eq!(
        (s.fragment_path, s.unit_file_state, s.invocation_id),
        (None, None, None)
    );
}

#[test]
fn drop_ins_are_listed_and_a_changed_file_needs_a_reload() {
    let s = fixture("drop-in");
    assert!(s.need_daemon_reload);
    assert_eq!(
        s.drop_in_paths,
        [
            "/tmp/um1/home/.config/systemd/user/oyster-cap-run.service.d/override.conf",
            "/tmp/um1/home/.config/systemd/user/oyster-cap-run.service.d/zz.conf"
        ]
        .map(PathBuf::from)
    );
}

#[test]
fn the_whole_show_parses_too_and_keeps_every_line_in_raw() {
    let s = fixture("all");
    assert!(s.is_running());
    assert!(s.raw.len() > 200, "{}", s.raw.len());
    // A value holding `=` is kept whole.
    assert!(
        s.raw["ExecStart"].contains("path=/bin/sleep"),
        "{:?}",
        s.raw["ExecStart"]
    );
}

#[test]
fn order_is_not_assumed_and_the_essential_states_are_required() {
    let running = include_str!("../../tests/fixtures/systemd/show-running.txt");
    let mut lines: Vec<&str> = running.lines().collect();
    lines.reverse();
    assert_eq!(
        UnitShow::parse(&lines.join("\n")).unwrap(),
        fixture("running")
    );
    let without: String = running
        .lines()
        .filter(|l| !l.starts_with("ActiveState="))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        UnitShow::parse(&without),
        Err(ShowError::Missing("ActiveState"))
    );
    let bad = running.replace("MainPID=29266", "MainPID=x");
    assert!(matches!(
        UnitShow::parse(&bad),
        Err(ShowError::Bad { key: "MainPID", .. })
    ));
    assert!(UnitShow::parse("").is_err());
}

#[test]
fn paths_with_blanks_come_quoted_and_are_read_whole() {
    let text = include_str!("../../tests/fixtures/systemd/show-paths-with-spaces.txt");
    let s = UnitShow::parse(&format!(
        "{text}LoadState=loaded\nActiveState=inactive\nSubState=dead\n"
    ))
    .unwrap();
    let dir = "/tmp/um3/h o/.config/systemd/user/d.service.d";
    assert_eq!(
        s.drop_in_paths,
        [format!("{dir}/x y.conf"), format!("{dir}/z.conf")].map(PathBuf::from)
    );
    assert_eq!(
        s.fragment_path.unwrap(),
        Path::new("/tmp/um3/h o/.config/systemd/user/d.service")
    );
    assert_eq!(
        split_words(r#"plain "a b" "q\"x" /c"#),
        ["plain", "a b", "q\"x", "/c"]
    );
}
