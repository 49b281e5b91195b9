//! A hostile user against the everyday layer (issue 22): every hint is copied and run as
//! shown (it must act on the stack the user named, never on production), a login-QR entry
//! point that floods its output must still answer Ctrl-C, fish completes a plain stack after
//! an alias, and an unknown argument shows the verb's whole usage.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{free_port, real_node, runner_tool, TestContext, BIN};

/// A HOME with the simulator and the pinned Node.
fn ctx() -> TestContext {
    let mut t = TestContext::new();
    t.use_sim();
    t.extra_env.push((
        "OYSTERUN_NODE_BIN".into(),
        real_node().display().to_string(),
    ));
    t
}

/// Installs `stack` from its own fixture root and returns that root.
fn install(t: &TestContext, stack: &str) -> std::path::PathBuf {
    let root = t.fixture_root(&format!("root-{stack}"));
    t.run([
        "install",
        stack,
        "--port",
        &free_port().to_string(),
        "--root",
        root.to_str().unwrap(),
        "--settle-ms",
        "200",
    ])
    .ok();
    root
}

/// Starts oyster with stdout to /dev/null and stderr to a file; returns the child and the
/// file's path.
fn spawn(t: &TestContext, args: &[&str]) -> (std::process::Child, std::path::PathBuf) {
    let err = t.path("stderr.txt");
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("HOME", &t.home)
        .env("PATH", "")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err).unwrap());
    for (k, v) in &t.extra_env {
        c.env(k, v);
    }
    (c.spawn().unwrap(), err)
}

fn wait_bounded(child: &mut std::process::Child, bound: Duration, err: &Path) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "oyster still ran after {bound:?} (killed); stderr:\n{}",
                tail(err)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tail(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("y")).collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

#[test]
fn a_login_qr_that_floods_its_output_still_answers_ctrl_c() {
    let yes = runner_tool("yes").expect("this test needs yes(1)");
    let t = ctx();
    let root = install(&t, "flood");
    // The entry point hands its stdout to a program that never stops writing.
    std::fs::write(
        root.join("host-service/setup.mjs"),
        format!(
            "import cp from \"node:child_process\";\ncp.spawnSync({:?}, [\"y-flood-line\"], {{ stdio: \"inherit\" }});\n",
            yes.display().to_string()
        ),
    )
    .unwrap();
    let (mut child, err) = spawn(&t, &["restart", "flood", "--qr", "--settle-ms", "200"]);
    let t0 = Instant::now();
    while !std::fs::read_to_string(&err)
        .unwrap_or_default()
        .contains("waiting for the login QR")
    {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", tail(&err));
        assert!(child.try_wait().unwrap().is_none(), "{}", tail(&err));
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the flood fill every buffer between the entry point and oyster's printing.
    std::thread::sleep(Duration::from_millis(1500));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let code = wait_bounded(&mut child, Duration::from_secs(10), &err);
    assert_eq!(code, 130, "{}", tail(&err));
    // The Host it restarted is still verified; the flood's processes are gone.
    let st = t.run(["status", "flood", "--json"]).json();
    assert_eq!(st["verified"], true, "{st}");
}
