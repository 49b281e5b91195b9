//! Every refusal and every shape of decision, without a process.

use super::*;

fn loaded(target: &str, pid: Option<u32>, matches: bool) -> Loaded {
    Loaded {
        target: target.into(),
        pid,
        running: pid.is_some(),
        matches,
    }
}

/// A job loaded in `gui/501`, running pid 10 the plan's definition, nothing else going on.
fn running() -> Observed {
    Observed {
        everywhere: vec!["gui/501/l".into(), "user/501/l".into()],
        here: "gui/501/l".into(),
        loaded_here: Some(loaded("gui/501/l", Some(10), true)),
        others: vec![],
        definition: "/p.plist".into(),
        definition_changed: false,
        pending: false,
        disabled_here: false,
        disabled_anywhere: false,
        switched_off: false,
        port: PortHolder::Free,
        direct: None,
    }
}

fn planned(edits: Vec<ConfigEdit>) -> Planned {
    Planned {
        config: "/c.json".into(),
        edits,
        port: 8810,
        ignore_switch: false,
    }
}

fn names(d: &Decision) -> Vec<&'static str> {
    d.steps.iter().map(Step::name).collect()
}

#[test]
fn an_unchanged_running_job_is_only_verified_and_restart_restarts_it() {
    let d = decide(&running(), &planned(vec![]), Request::Apply).unwrap();
    assert_eq!((d.change, names(&d)), (Change::Unchanged, vec!["verify"]));
    let d = decide(&running(), &planned(vec![]), Request::Restart).unwrap();
    assert_eq!(
        (d.change, names(&d)),
        (Change::Restart, vec!["restart", "verify"])
    );
    assert_eq!(
        d.steps[0],
        Step::Restart {
            target: "gui/501/l".into(),
            pid: Some(10)
        }
    );
}

#[test]
fn a_changed_or_stale_definition_is_written_and_loaded_again() {
    let port = ConfigEdit {
        key: "port".into(),
        from: 8802.into(),
        to: 8810.into(),
    };
    let mut o = running();
    o.definition_changed = true;
    let d = decide(&o, &planned(vec![port]), Request::Restart).unwrap();
    assert_eq!(d.change, Change::Reload);
    assert_eq!(
        names(&d),
        [
            "write_config",
            "write_definition",
            "enable",
            "boot_out",
            "load",
            "verify"
        ]
    );
    // Loaded from a definition that no longer matches: reloaded, nothing written.
    let mut o = running();
    o.loaded_here.as_mut().unwrap().matches = false;
    let d = decide(&o, &planned(vec![]), Request::Apply).unwrap();
    assert_eq!(names(&d), ["enable", "boot_out", "load", "verify"]);
    // Not loaded at all: loaded, no bootout.
    let mut o = running();
    o.loaded_here = None;
    let d = decide(&o, &planned(vec![]), Request::Apply).unwrap();
    assert_eq!(names(&d), ["enable", "load", "verify"]);
}

#[test]
fn an_unfinished_run_is_recovered_with_the_step_it_still_needs() {
    let mut o = running();
    o.pending = true;
    let d = decide(&o, &planned(vec![]), Request::Apply).unwrap();
    assert_eq!(d.change, Change::Recover(Then::Verify));
    assert!(d.change.rolls_back());
    o.loaded_here = None;
    let d = decide(&o, &planned(vec![]), Request::Apply).unwrap();
    assert_eq!(d.change, Change::Recover(Then::Reload));
}

#[test]
fn a_copy_in_the_other_domain_is_booted_out_and_an_idle_copy_here_started() {
    let mut o = running();
    o.others = vec![loaded("user/501/l", Some(20), true)];
    o.loaded_here = Some(loaded("gui/501/l", None, true));
    let d = decide(&o, &planned(vec![]), Request::Apply).unwrap();
    assert_eq!(d.change, Change::Restart);
    assert_eq!(names(&d), ["boot_out", "restart", "verify"]);
    assert!(matches!(&d.steps[0], Step::BootOut { target, .. } if target == "user/501/l"));
}

#[test]
fn a_port_held_by_another_process_or_an_invisible_one_is_refused() {
    let mut o = running();
    o.port = PortHolder::Foreign {
        pid: 7,
        name: "nc".into(),
        stack: Some("qa".into()),
    };
    assert_eq!(
        decide(&o, &planned(vec![]), Request::Restart),
        Err(Refusal::PortHeld {
            port: 8810,
            pid: 7,
            name: "nc".into(),
            stack: Some("qa".into())
        })
    );
    o.port = PortHolder::Invisible;
    assert_eq!(
        decide(&o, &planned(vec![]), Request::Start),
        Err(Refusal::PortInvisible { port: 8810 })
    );
    // A listing that failed is said, never refused.
    o.port = PortHolder::Unknown("no /proc".into());
    assert!(decide(&o, &planned(vec![]), Request::Apply).is_ok());
}

#[test]
fn a_reload_of_a_job_switched_off_is_refused_only_when_it_does_not_run() {
    let mut o = running();
    o.switched_off = true;
    // The same definition restarted: launchd keeps it loaded, so it is allowed.
    let d = decide(&o, &planned(vec![]), Request::Restart).unwrap();
    assert!(!d.switched_off);
    // A changed definition of a job that runs: reloaded, with a note.
    o.definition_changed = true;
    let d = decide(&o, &planned(vec![]), Request::Restart).unwrap();
    assert!(d.switched_off);
    // One that does not run: refused, unless the user says it is switched on.
    o.loaded_here = Some(loaded("gui/501/l", None, true));
    assert_eq!(
        decide(&o, &planned(vec![]), Request::Restart),
        Err(Refusal::SwitchedOff {
            target: "gui/501/l".into()
        })
    );
    let mut p = planned(vec![]);
    p.ignore_switch = true;
    assert!(decide(&o, &p, Request::Restart).unwrap().switched_off);
    // Not loaded: nothing running would be left down (the load itself names the cause).
    o.loaded_here = None;
    assert!(decide(&o, &planned(vec![]), Request::Apply).is_ok());
}

#[test]
fn start_enables_everywhere_first_and_finishes_an_interrupted_stop() {
    let mut o = running();
    o.loaded_here = None;
    o.disabled_here = true;
    o.disabled_anywhere = true;
    let d = decide(&o, &planned(vec![]), Request::Start).unwrap();
    assert_eq!(names(&d), ["enable", "enable", "load", "verify"]);
    assert!(
        d.keep_stopped,
        "a failed start leaves a stopped stack stopped"
    );
    // Disabled and still listed: an interrupted stop's bootout is finished first.
    let mut o = running();
    o.disabled_here = true;
    o.disabled_anywhere = true;
    let d = decide(&o, &planned(vec![]), Request::Start).unwrap();
    assert_eq!(
        names(&d),
        ["finish_stop", "enable", "enable", "load", "verify"]
    );
    assert!(d.keep_stopped);
    // Running and enabled: start verifies it.
    let d = decide(&running(), &planned(vec![]), Request::Start).unwrap();
    assert_eq!(names(&d), ["enable", "verify"]);
    assert!(!d.keep_stopped);
}

#[test]
fn stop_and_uninstall_boot_every_copy_out() {
    let mut o = running();
    o.others = vec![loaded("user/501/l", None, true)];
    let names = |s: Vec<Step>| s.iter().map(Step::name).collect::<Vec<_>>();
    assert_eq!(
        names(decide_stop(&o, false, true)),
        ["boot_out", "boot_out", "disable"]
    );
    assert_eq!(names(decide_stop(&o, true, true)), ["boot_out", "boot_out"]);
    assert_eq!(
        names(decide_uninstall(&o, true)),
        ["boot_out", "boot_out", "enable", "remove_definition"]
    );
    o.others.clear();
    o.loaded_here = None;
    assert_eq!(names(decide_stop(&o, false, true)), ["disable"]);
}

#[test]
fn a_directly_started_host_the_manager_takes_over_is_stopped_before_the_load() {
    let mut o = running();
    o.loaded_here = None;
    o.direct = Some(42);
    let d = decide(&o, &planned(vec![]), Request::Apply).unwrap();
    assert_eq!(names(&d), ["stop_direct", "enable", "load", "verify"]);
}

#[test]
fn a_port_another_stacks_job_claims_is_refused_naming_that_stack() {
    let claims = [
        Claim {
            stack: "dev".into(),
            port: 8810,
        },
        Claim {
            stack: "qa".into(),
            port: 8820,
        },
    ];
    assert_eq!(
        port_claimed("qa", 8810, &claims),
        Err(PortClaimed {
            port: 8810,
            stack: "dev".into()
        })
    );
    // Its own port, and a port nobody claims, are fine.
    assert_eq!(port_claimed("qa", 8820, &claims), Ok(()));
    assert_eq!(port_claimed("qa", 8830, &claims), Ok(()));
    assert_eq!(port_claimed("dev", 8810, &claims), Ok(()));
}
