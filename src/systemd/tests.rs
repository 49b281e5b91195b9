//! The door with a stand-in systemctl: how it is located, what every call hands it, and how
//! its failures are typed. (The real manager: tests/it/systemd_door.rs.)

use super::*;
use std::os::unix::fs::PermissionsExt;

/// A stand-in `systemctl` that logs its arguments and `XDG_RUNTIME_DIR` to `calls`, then runs
/// `body` (sh).
fn stand_in(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("systemctl");
    let log = dir.join("calls");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nprintf '%s|%s\\n' \"$XDG_RUNTIME_DIR\" \"$*\" >> '{}'\n{body}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn located(dir: &Path, body: &str, runtime: &Path) -> Systemctl {
    let fake = stand_in(dir, body);
    Systemctl::locate(Some(fake.as_os_str()), Some(runtime.as_os_str())).unwrap()
}

#[test]
fn an_override_must_be_an_absolute_executable_and_none_switches_systemd_off() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "").unwrap();
    for bad in [
        OsStr::new("systemctl"),
        plain.as_os_str(),
        dir.path().as_os_str(),
        OsStr::new("/nonexistent/systemctl"),
    ] {
        let e = Systemctl::locate(Some(bad), None).unwrap_err();
        assert!(matches!(e, LocateError::BadOverride(_)), "{bad:?}: {e}");
        assert!(e.is_invalid_input());
        assert_eq!(crate::error::HasKind::kind(&e), crate::error::Kind::Invalid);
    }
    let off = Systemctl::locate(Some(OsStr::new("none")), None).unwrap_err();
    assert!(matches!(off, LocateError::Off) && !off.is_invalid_input());
    assert!(!LocateError::Missing.is_invalid_input());
}

#[test]
fn the_runtime_dir_is_the_callers_or_the_uid_default_and_describe_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let fake = stand_in(dir.path(), "");
    let given = Systemctl::locate(Some(fake.as_os_str()), Some(OsStr::new("/run/x"))).unwrap();
    assert_eq!(
        (given.runtime_dir.as_path(), given.runtime_dir_defaulted),
        (Path::new("/run/x"), false)
    );
    assert!(given.overridden);
    assert_eq!(
        given.describe(),
        format!(
            "{} (from OYSTER_SYSTEMCTL), XDG_RUNTIME_DIR=/run/x",
            fake.display()
        )
    );
    for unset in [None, Some(OsStr::new(""))] {
        let d = Systemctl::locate(Some(fake.as_os_str()), unset).unwrap();
        let uid = crate::sys::user::uid();
        assert_eq!(d.runtime_dir, PathBuf::from(format!("/run/user/{uid}")));
        assert!(d.runtime_dir_defaulted && d.describe().ends_with("(default)"));
    }
    // Nothing beside the stand-in: no loginctl, so no linger answer.
    assert_eq!((given.loginctl(), given.linger("ana")), (None, None));
}

#[test]
fn every_verb_is_one_user_call_with_the_runtime_dir_and_the_unit_last() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let sc = located(dir.path(), "exit 0", &run);
    let u = "com.oysterun.host.dev.service";
    sc.daemon_reload().unwrap();
    sc.enable(u).unwrap();
    sc.disable(u, true).unwrap();
    sc.disable(u, false).unwrap();
    sc.start(u).unwrap();
    sc.stop(u).unwrap();
    sc.restart(u).unwrap();
    sc.reset_failed(u).unwrap();
    sc.kill(u, crate::sys::signal::Signal::SIGTERM, true)
        .unwrap();
    sc.kill(u, crate::sys::signal::Signal::SIGKILL, false)
        .unwrap();
    let r = run.display();
    let want: Vec<String> = [
        "--user daemon-reload".to_owned(),
        format!("--user enable {u}"),
        format!("--user disable --now {u}"),
        format!("--user disable {u}"),
        format!("--user start {u}"),
        format!("--user stop {u}"),
        format!("--user restart {u}"),
        format!("--user reset-failed {u}"),
        format!("--user kill --signal=SIGTERM --kill-who=main {u}"),
        format!("--user kill --signal=SIGKILL --kill-who=all {u}"),
    ]
    .iter()
    .map(|c| format!("{r}|{c}"))
    .collect();
    assert_eq!(calls(dir.path()), want);
}

#[test]
fn a_name_systemctl_would_read_as_an_option_never_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let sc = located(dir.path(), "exit 0", dir.path());
    for bad in ["--now", "-x.service", "a b.service", "*.service", ""] {
        assert!(
            matches!(sc.start(bad), Err(CallError::BadUnit(_))),
            "{bad:?}"
        );
    }
    assert!(calls(dir.path()).is_empty());
}

#[test]
fn a_failed_verb_is_a_systemctl_error_with_what_it_said() {
    let dir = tempfile::tempdir().unwrap();
    let sc = located(
        dir.path(),
        "echo 'Job for x.service failed.' >&2; exit 1",
        dir.path(),
    );
    let Err(CallError::Exit(e)) = sc.start("x.service") else {
        panic!("a non-zero exit is an error")
    };
    assert_eq!((e.code, e.stderr.trim()), (1, "Job for x.service failed."));
    assert!(e.argv.ends_with("--user start x.service"), "{}", e.argv);
    assert!(e.to_string().contains("exited with 1: Job for"), "{e}");
}

#[test]
fn show_asks_every_property_in_one_call_and_parses_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/systemd");
    let body = format!("cat '{}'", fixture.join("show-running.txt").display());
    let sc = located(dir.path(), &body, dir.path());
    let s = sc.show("oyster-cap-run.service").unwrap();
    assert!(s.is_running());
    let c = calls(dir.path());
    assert_eq!(c.len(), 1);
    assert!(
        c[0].ends_with(&format!(
            "--user show --property={} oyster-cap-run.service",
            PROPERTIES.join(",")
        )),
        "{c:?}"
    );
}

#[test]
fn the_manager_probe_types_each_answer() {
    let dir = tempfile::tempdir().unwrap();
    let state = |body: &str| located(dir.path(), body, dir.path()).manager_state();
    assert_eq!(state("echo running"), Ok(ManagerState::Running));
    assert_eq!(state("echo degraded"), Ok(ManagerState::Degraded));
    let e = state("echo stopping").unwrap_err();
    assert_eq!(e.cause, Cause::NotRunning("stopping".into()));
    let e = state("echo 'Failed to connect to bus: No medium found' >&2; exit 1").unwrap_err();
    assert_eq!(
        (e.cause, e.detail.as_str()),
        (Cause::NoBus, "Failed to connect to bus: No medium found")
    );
    let e = state("echo 'Failed to connect to bus: Permission denied' >&2; exit 1").unwrap_err();
    assert_eq!(e.cause, Cause::PermissionDenied);
    assert!(calls(dir.path())
        .iter()
        .all(|c| c.ends_with("--user show --property=SystemState --value")));
    // A runtime directory that is not there is said without asking systemctl.
    let before = calls(dir.path()).len();
    let gone = dir.path().join("gone");
    let e = located(dir.path(), "echo running", &gone)
        .manager_state()
        .unwrap_err();
    assert_eq!(e.cause, Cause::NoRuntimeDir);
    assert_eq!(e.detail, gone.display().to_string());
    assert_eq!(calls(dir.path()).len(), before);
    assert_eq!(
        e.to_string(),
        "systemd --user is unreachable: no runtime directory"
    );
}

#[test]
fn linger_is_asked_of_the_loginctl_beside_an_overriding_systemctl() {
    let dir = tempfile::tempdir().unwrap();
    let sc = located(dir.path(), "", dir.path());
    let loginctl = dir.path().join("loginctl");
    let answer = dir.path().join("answer");
    std::fs::write(
        &loginctl,
        format!(
            "#!/bin/sh\n[ \"$*\" = 'show-user ana --property=Linger --value' ] || exit 9\n\
             cat '{}'\n",
            answer.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&loginctl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sc = Systemctl::locate(Some(sc.path.as_os_str()), None).unwrap();
    assert_eq!(sc.loginctl(), Some(loginctl.as_path()));
    for (said, want) in [("yes\n", Some(true)), ("no\n", Some(false)), ("", None)] {
        std::fs::write(&answer, said).unwrap();
        assert_eq!(sc.linger("ana"), want, "{said:?}");
    }
    assert_eq!(sc.linger("-x"), None);
    assert_eq!(sc.linger("bob"), None, "loginctl failing is no answer");
}
