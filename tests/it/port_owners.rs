//! Two stacks on one port (issue 38, item 4): a port another stack's job is installed on,
//! stopped or running, is refused before anything is written, naming the stack that owns it.

use crate::common::{self, free_port, TestContext};

#[test]
fn setup_on_the_port_of_a_stopped_stack_is_refused_naming_it() {
    let (t, port) = TestContext::with_stopped("dev");
    let before = common::tree(&t.home);
    let r =
        t.run(common::args(&["setup", "qa", "--no-install-providers"]).port(port)).fails_with(1);
    r.stderr_has(&format!("port {port} is stack dev's"));
    r.stderr_has("give stack qa another port with --port, or remove stack dev first (`oyster uninstall dev`)");
    assert_eq!(common::tree(&t.home), before, "nothing was written");
    t.assert_no_stack("qa", "refused first");
    // install and restart refuse it the same way, and another port is fine.
    let r = t.run(common::args(&["install", "qa"]).port(port)).fails_with(1);
    r.stderr_has(&format!("port {port} is stack dev's"));
    t.assert_no_stack("qa", "refused first");
    let other = free_port();
    t.run(common::args(&["setup", "qa", "--no-install-providers"]).port(other).settle(200)).ok();
    // dev's own port stays dev's to start.
    t.run(common::args(&["start", "dev"]).settle(200)).ok();
    t.run(["uninstall", "qa"]).ok();
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

/// Oysterun 1.5.3's own restart takes production's port to be 8802 (`oysterun_service_common.sh`:
/// `PRODUCTION_HOST_PORT="8802"`, `--port` refused for a preset stack, the sync writes it):
/// production elsewhere is said, with the way out.
#[test]
fn production_on_another_port_is_warned_that_oysteruns_own_restart_assumes_8802() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    let r = t.run(common::args(&["install"]).port(port).settle(200)).ok();
    r.stderr_has(&format!(
        "production on port {port}: Oysterun's own in-app restart assumes production is on 8802"
    ));
    r.stderr_has(&format!("a custom stack keeps another port (`oyster setup NAME --port {port}`)"));
    // The other doors that record production's port say it too: `config sync --port` and a
    // direct start (Oysterun's own restart of a pid-file Host takes 8802 as well).
    t.run(["uninstall"]).ok();
    let other = free_port();
    let r = t.run(common::args(&["config", "sync"]).port(other)).ok();
    r.stderr_has(&format!(
        "production on port {other}: Oysterun's own in-app restart assumes production is on 8802"
    ));
    let direct = TestContext::with_pinned_host_no_launchd();
    let r = direct.run(common::args(&["host", "start"]).port(free_port()).settle(200)).ok();
    r.stderr_has("Oysterun's own in-app restart assumes production is on 8802");
    direct.run(["host", "stop"]).ok();
    t.run(common::args(&["install"]).port(port).settle(200)).ok();
    // A custom stack on any port: nothing to say.
    let r = t.run(common::args(&["install", "dev"]).port(free_port()).settle(200)).ok();
    assert!(!r.stderr().contains("in-app restart"), "{}", r.stderr());
    t.run(["uninstall"]).ok();
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

/// The same port through the other doors that take `--port`: `config sync --port` (of a new
/// stack and of one set up elsewhere) and `host start --port`. Each is refused naming the
/// owner, before anything is written; before, `config sync` recorded it (so a later `restart`
/// of the owner was refused as if the port were the other stack's) and `host start` started a
/// second Host there, so the stopped owner could not start again.
#[test]
fn config_sync_and_host_start_on_another_stacks_port_are_refused_naming_it() {
    let (t, port) = TestContext::with_stopped("dev");
    let qa_port = free_port();
    t.run(common::args(&["config", "sync"]).stack("qa").port(qa_port)).ok();
    let before = common::tree(&t.home);
    for args in [
        common::args(&["config", "sync"]).stack("new").port(port),
        common::args(&["config", "sync"]).stack("qa").port(port),
        common::args(&["host", "start"]).stack("new").port(port),
        common::args(&["host", "start"]).stack("qa").port(port),
    ] {
        let args: Vec<String> = args.into();
        let r = t.run(&args).fails_with(1);
        r.stderr_has(&format!("port {port} is stack dev's"));
        assert_eq!(common::tree(&t.home), before, "{args:?} wrote");
    }
    t.assert_no_stack("new", "refused first");
    // The owner starts on its port, and its own sync of it is no claim on itself.
    t.run(common::args(&["config", "sync"]).stack("dev").port(port)).ok();
    t.run(common::args(&["start", "dev"]).settle(200)).ok();
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}
