//! The suite stands on its own: nothing in it needs production's port 8802 or staging's 9902
//! to be free (issue 28). On a contributor's Mac an Oysterun Host already listens there, so
//! every test runs with both held by another process, as such a Host holds them
//! (`scripts/hold-ports.py`: every interface): each [`TestContext`] holds a [`Held`] for its
//! life, so a test that runs a stack on a default port fails on every machine, not only on a
//! contributor's. The tests here prove the hold is real (a command without `--port` is refused
//! naming the port) and run production and staging whole on ports from the allocator.
//! `scripts/test-fresh.sh` also holds both from outside for the whole `make test`.
//!
//! [`TestContext`]: crate::common::TestContext

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::common::{args, Stack};

/// Production's and staging's default ports (docs/behaviour.md, "Stacks").
const DEFAULTS: [u16; 2] = [8802, 9902];

/// `scripts/hold-ports.py` holding `ports` until dropped (its stdin closes; then it is reaped).
pub struct Holder(Child);

impl Holder {
    pub fn new(ports: &[u16]) -> Holder {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hold-ports.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(ports.iter().map(u16::to_string))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let mut said = vec![];
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line == "ready" {
                break;
            }
            said.push(line);
        }
        // `busy`: something else (a real Host, test-fresh's holder) holds it; held either way.
        assert_eq!(said.len(), ports.len(), "hold-ports.py said {said:?}");
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// The one holder of this test process, shared by the tests running at once (a second holder
/// would only find the ports busy, and the first one's end would free them under the other):
/// started by the first [`Held`], ended with the last.
static HOLDER: std::sync::Mutex<(usize, Option<Holder>)> = std::sync::Mutex::new((0, None));

/// While alive, production's and staging's default ports are held by another process.
pub struct Held(());

impl Held {
    pub fn defaults() -> Held {
        let mut h = HOLDER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if h.0 == 0 {
            h.1 = Some(Holder::new(&DEFAULTS));
        }
        h.0 += 1;
        Held(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut h = HOLDER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        h.0 -= 1;
        if h.0 == 0 {
            h.1 = None;
        }
    }
}

/// A stack on its default port (nothing given) is refused while that port is held, naming
/// the port, and nothing is written; with `--port` from the allocator it installs, verifies,
/// restarts and uninstalls as anywhere else, and its status reports that port.
fn whole_lifecycle_beside_a_held_default(name: &'static str, default: u16) {
    let s = Stack::new(name);
    let bare: Vec<String> =
        args(&["agent", "install"]).stack(name).host(&s.root).wait(10, 300).into();
    let e = s.t.run(&bare).fails_with(1).stderr();
    assert!(
        e.contains(&format!("port {default} is already held")),
        "{name} on its default port {default}: {e}"
    );
    assert!(!s.plist().exists(), "a refused install writes no plist");

    let out = s.t.run(s.args("install")).ok().stdout();
    assert!(out.contains("verified"), "{name}: {out}");
    let st = s.status();
    assert_eq!(
        (st["verified"].as_bool(), st["port"].as_u64()),
        (Some(true), Some(u64::from(s.port))),
        "{name}: {st}"
    );
    assert_eq!(crate::common::get(s.port, "/health"), 200);
    s.t.run(s.args("restart")).ok();
    assert_eq!(s.status()["verified"], true, "{name} after restart");
    // Later commands read the port back (config, plist): no `--port`, still not the default.
    let st = s.t.run(["agent", "status", "--json", "--stack", name]).json();
    assert_eq!(st["port"].as_u64(), Some(u64::from(s.port)), "{st}");
    s.t.run(["agent", "uninstall", "--stack", name]).ok();
    s.t.wait_no_processes();
}

#[test]
fn production_and_staging_run_on_allocated_ports_while_8802_and_9902_are_held() {
    let _held = Held::defaults();
    whole_lifecycle_beside_a_held_default("production", 8802);
    whole_lifecycle_beside_a_held_default("staging", 9902);
}

/// The direct (pid-file) start of production beside a held 8802: refused without a port,
/// started and stopped with one.
#[test]
fn a_direct_start_of_production_beside_a_held_8802_takes_the_port_it_is_given() {
    let _held = Held::defaults();
    let s = Stack::new("production");
    let bare: Vec<String> = args(&["host", "start"]).host(&s.root).wait_secs(10).into();
    s.t.run(&bare).fails_with(1).stderr_has_all(&["8802"]);
    let given: Vec<String> = s.host_args(&["host", "start"]).wait_secs(10).into();
    s.t.run(&given).ok().stdout_has_all(&["environment verified"]);
    assert_eq!(crate::common::get(s.port, "/health"), 200);
    s.t.run(["host", "stop"]).ok();
    s.t.wait_no_processes();
}
