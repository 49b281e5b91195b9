//! Unit tests of the lifecycle's units, without the simulator.

use super::restart::spawned;
use super::*;
use crate::service::port::{check_port, port_in_use, PortCheck};
use crate::sys::net::Holder;
use std::cell::Cell;

fn h(pid: u32) -> Holder {
    Holder {
        pid,
        name: format!("p{pid}"),
    }
}

#[test]
fn a_port_held_by_our_own_host_is_free_and_by_another_is_refused() {
    let listed = |_| Ok(vec![h(10)]);
    assert_eq!(
        check_port(1, listed, |p| p == 10, |_| true),
        PortCheck::Free
    );
    assert_eq!(
        check_port(1, listed, |_| false, |_| false),
        PortCheck::Foreign(h(10))
    );
    assert_eq!(
        check_port(1, |_| Ok(vec![h(10), h(11)]), |p| p == 10, |_| false),
        PortCheck::Foreign(h(11)),
        "a second listener beside ours is still refused"
    );
}

#[test]
fn a_phantom_holder_that_the_second_listing_does_not_show_is_not_refused() {
    let calls = Cell::new(0);
    let list = |_| {
        calls.set(calls.get() + 1);
        Ok(if calls.get() == 1 {
            vec![h(77)]
        } else {
            vec![]
        })
    };
    assert_eq!(check_port(1, list, |_| false, |_| false), PortCheck::Free);
    assert_eq!(calls.get(), 2, "listed again before refusing");
}

#[test]
fn nobody_visible_but_unbindable_is_an_invisible_holder() {
    assert_eq!(
        check_port(1, |_| Ok(vec![]), |_| false, |_| true),
        PortCheck::Invisible
    );
    assert_eq!(
        check_port(1, |_| Ok(vec![]), |_| false, |_| false),
        PortCheck::Free
    );
    assert!(matches!(
        check_port(1, |_| Err("no /proc".into()), |_| false, |_| true),
        PortCheck::Unknown(_)
    ));
}

#[test]
fn a_bound_port_is_in_use_and_a_released_one_is_not() {
    let l = std::net::TcpListener::bind(("::", 0))
        .or_else(|_| std::net::TcpListener::bind(("0.0.0.0", 0)))
        .unwrap();
    let port = l.local_addr().unwrap().port();
    assert!(port_in_use(port));
    drop(l);
    assert!(!port_in_use(port));
}

fn info(text: &str) -> PrintInfo {
    crate::launchctl::parse_print(text)
}

#[test]
fn the_old_instances_exit_and_oysters_own_signals_are_not_crash_evidence() {
    let before = info("x = {\n\truns = 3\n\tlast exit code = 1\n}\n");
    let mut b = Baseline::of(Some(&before));
    b.sent.push(15);
    // Launchd spawned once since (runs 4), the job is scheduled: the old exit and our
    // SIGTERM are not this instance's crash.
    let same_exit = info("x = {\n\truns = 4\n\tstate = spawn scheduled\n\tlast exit code = 1\n}\n");
    assert!(!b.crashed(&same_exit));
    let our_signal = info(
        "x = {\n\truns = 4\n\tstate = not running\n\tlast terminating signal = Terminated: 15\n}\n",
    );
    assert!(!b.crashed(&our_signal));
    let new_exit =
        info("x = {\n\truns = 4\n\tstate = spawn scheduled\n\tlast exit code = 78: EX_CONFIG\n}\n");
    assert!(b.crashed(&new_exit));
    let not_ours_yet =
        info("x = {\n\truns = 3\n\tstate = spawn scheduled\n\tlast exit code = 78\n}\n");
    assert!(
        !b.crashed(&not_ours_yet),
        "nothing spawned since the baseline"
    );
}

#[test]
fn backoff_doubles_up_to_its_cap() {
    let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
    let got: Vec<u128> = (0..4).map(|_| b.next().as_millis()).collect();
    assert_eq!(got, [100, 200, 300, 300]);
}

#[test]
fn a_kickstart_pid_becomes_the_new_instance_with_one_more_run() {
    let before = info("x = {\n\tpath = /p.plist\n\tstate = running\n\tpid = 5\n\truns = 2\n}\n");
    let (pid, new) = spawned(Some(&before), Some(9)).unwrap();
    assert_eq!((pid, new.pid(), new.runs()), (9, Some(9), Some(3)));
    assert!(new.running());
    assert_eq!(new.path(), before.path());
    assert!(spawned(Some(&before), None).is_none());
    assert!(spawned(None, Some(9)).is_none());
}
