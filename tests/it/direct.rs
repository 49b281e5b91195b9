//! Direct (pid-file) startup with the real Node fixture (docs/behaviour.md §6).

use std::process::{Command, Stdio};

use crate::common::{args, free_port, real_node, TestContext};
use crate::common::{has_all, has_none};

fn start_args(root: &std::path::Path, port: u16) -> Vec<String> {
    args(&["host", "start"]).stack("it").host(root).port(port).wait_secs(10).into()
}

#[test]
fn start_status_stop_with_the_live_environment_read_back() {
    let mut t = TestContext::new();
    t.extra_env.push(("SECRET_TOKEN".into(), "do-not-inherit".into()));
    let claude = t.fake_exe(&t.home.join(".local/bin/claude"));
    let root = t.fixture_root("root");
    let port = free_port();
    let r = t.run(start_args(&root, port)).ok();
    r.stdout_has("environment verified");
    // A custom stack's pid file is named as Oysterun names it, and holds the pid and a newline
    // only (Oysterun reads it with `tr -d '[:space:]'`).
    let pid_file = t.home.join(".oysterun-stacks/it/run/oysterun-host-it.pid");
    let text = std::fs::read_to_string(&pid_file).unwrap();
    let pid: u32 = text.trim_end_matches('\n').parse().unwrap();
    assert_eq!(text, format!("{pid}\n"));

    // The Host's environment as oyster's proof reads it: the kernel's view (procfs, or
    // `KERN_PROCARGS2` on macOS), or where macOS hides it, the launch program's own record.
    let env = t.host_environ(pid);
    assert!(!env.is_empty(), "neither the kernel nor the exec record");
    let node_dir = real_node().parent().unwrap().display().to_string();
    let want_path = format!(
        "PATH={node_dir}:{}:/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        claude.parent().unwrap().display()
    )
    .replace(&format!("{node_dir}:/usr/bin"), &node_dir);
    let path_line = env.iter().find(|kv| kv.starts_with("PATH=")).unwrap();
    let dedup: Vec<&str> = {
        let mut seen = vec![];
        for p in want_path.trim_start_matches("PATH=").split(':') {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        seen
    };
    assert_eq!(path_line.trim_start_matches("PATH="), dedup.join(":"));
    assert!(env.contains(&format!("OYSTERUN_NODE_BIN={}", real_node().display())));
    assert!(env.contains(&format!("OYSTERUN_PORT={port}")));
    assert!(env.contains(&format!("HOME={}", t.home.display())));
    assert!(!env.iter().any(|kv| kv.contains("SECRET")), "{env:?}");
    let names: Vec<&str> = env.iter().map(|kv| kv.split('=').next().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "HOME",
            "LOGNAME",
            "OYSTERUN_CONFIG_DIR",
            "OYSTERUN_NODE_BIN",
            "OYSTERUN_PORT",
            "OYSTERUN_REPO_ROOT",
            "OYSTERUN_ROUTEC_MATRIX_STORAGE_PATH",
            "OYSTERUN_ROUTEC_STACK_NAME",
            "OYSTERUN_ROUTEC_STACK_ROOT",
            "PATH",
            "SHELL",
            "TMPDIR",
            "USER"
        ]
    );

    let st = t.run(["host", "status", "--stack", "it", "--json"]).ok().json();
    assert_eq!(
        (
            st["running"].as_bool(),
            st["pid"].as_u64(),
            st["health"].as_u64(),
            st["verified"].as_bool()
        ),
        (Some(true), Some(pid as u64), Some(200), Some(true)),
        "{st}"
    );
    // And oyster says which proof it used: the kernel's wherever the kernel shows it.
    assert_eq!(st["env_proof"], crate::common::strongest_proof(pid), "{st}");

    // A second start is refused while the Host lives.
    // Its fix echoes how the stack was named: `--stack it`, or `it` after the verb.
    t.run(start_args(&root, port))
        .fails_with(1)
        .stderr_has_all(&["already running", "stop it with `oyster host stop --stack it`"]);
    let plain: Vec<String> = args(&["host", "start", "it"]).host(&root).port(port).into();
    t.run(&plain).fails_with(1).stderr_has_all(&["stop it with `oyster host stop it`"]);
    let st = t.run(["status", "it", "--json"]).json();
    assert!(st["notes"].to_string().contains("`oyster host stop it` stops it"), "{st}");
    // One direct-Host status (`direct::status`), rendered by both verbs: the same facts.
    let host = t.run(["host", "status", "--stack", "it", "--json"]).ok().json();
    for key in
        ["pid", "port", "running", "health", "verified", "env_proof", "env_mismatch", "managed_by"]
    {
        assert_eq!(st[key], host[key], "{key}: {st} against {host}");
    }

    let r = t.run(["host", "stop", "--stack", "it"]).ok();
    r.stdout_has(&format!("pid {pid}"));
    assert!(!pid_file.exists());
    for gone in ["oysterun-host-it.origin.tsv", "oyster-exec.json"] {
        assert!(
            !t.home.join(".oysterun-stacks/it/run").join(gone).exists(),
            "{gone} is removed with the pid file"
        );
    }
    assert!(t.own_processes().is_empty(), "the Host is gone");
    let st = t.run(["host", "status", "--stack", "it", "--json"]).fails_with(1).json();
    assert_eq!(st["running"], false);
    t.assert_nothing_executed();
}

#[test]
fn stop_never_signals_a_foreign_process() {
    let t = TestContext::new();
    let mut foreign = Command::new("sleep").arg("30").stdout(Stdio::null()).spawn().unwrap();
    let run_dir = t.home.join(".oysterun/run");
    std::fs::create_dir_all(&run_dir).unwrap();
    // A pid file in the format of an older oyster (its identity on later lines) is still read.
    std::fs::write(
        run_dir.join("oysterun-host.pid"),
        format!("{}\nstart_time=1\nserver=/x/host-service/server.mjs\nport=8802\n", foreign.id()),
    )
    .unwrap();
    let not_signalled = |foreign: &mut std::process::Child| {
        t.run(["host", "stop"]).ok().stdout_has("not signalled");
        assert!(foreign.try_wait().unwrap().is_none(), "the foreign process is alive");
    };
    not_signalled(&mut foreign);
    // Today's format: the pid only, the identity in oyster's exec record beside it.
    std::fs::write(run_dir.join("oysterun-host.pid"), format!("{}\n", foreign.id())).unwrap();
    std::fs::write(
        run_dir.join("oyster-exec.json"),
        format!(
            r#"{{"pid": {}, "start_time": 1, "started_at": "2025-01-01T00:00:00Z", "stack": "production",
               "argv": ["/n/node", "/x/host-service/server.mjs"], "cwd": "/x/host-service", "env": {{}},
               "oyster_version": "0"}}"#,
            foreign.id()
        ),
    )
    .unwrap();
    not_signalled(&mut foreign);
    assert!(!run_dir.join("oysterun-host.pid").exists());
    foreign.kill().unwrap();
    foreign.wait().unwrap();
    // A pid file naming a dead pid is stale: reported, removed.
    std::fs::write(run_dir.join("oysterun-host.pid"), format!("{}\n", foreign.id())).unwrap();
    let r = t.run(["host", "stop"]).ok();
    r.stdout_has("stale");
}

#[test]
fn a_host_that_crashes_on_start_fails_with_the_log_tail_and_leaves_nothing() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    TestContext::fixture_flag(&root, "crash-on-start", "");
    t.run(start_args(&root, free_port()))
        .fails_with(1)
        .stderr_has_all(&["exited", "crash-on-start is set"]);
    assert!(!t.home.join(".oysterun-stacks/it/run/oysterun-host-it.pid").exists());
    assert!(t.own_processes().is_empty());
}

#[test]
fn a_host_that_never_answers_health_is_stopped_after_the_wait() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    TestContext::fixture_flag(&root, "unhealthy", "");
    let mut args = start_args(&root, free_port());
    let n = args.len();
    args[n - 1] = "2".into();
    t.run(args).fails_with(1).stderr_has_all(&["503"]);
    assert!(t.own_processes().is_empty());
}

#[test]
fn a_host_that_dies_right_after_health_is_a_crash_loop() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    // The fixture's timer starts before it listens, so a crash 600 ms after start lands
    // after /health answered (polled every 20 ms) and always inside the 1 s settle period.
    TestContext::fixture_flag(&root, "crash-after-ms", "600");
    let e = t.run(start_args(&root, free_port())).fails_with(1).stderr();
    // Caught by the settle check, and said so: not "exited before answering /health", which
    // is a Host that never came up.
    has_all(&e, &["crash loop"]);
    has_none(&e, &["before answering"]);
    assert!(e.contains("crashing after 600 ms"), "the log tail: {e}");
    assert!(t.own_processes().is_empty());
}

#[test]
fn the_next_launch_sweeps_temp_files_a_killed_launch_left_beside_the_identity_files() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let run = t.home.join(".oysterun-stacks/it/run");
    std::fs::create_dir_all(&run).unwrap();
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    for name in ["oyster-exec.json", "oysterun-host-it.pid", "oysterun-host-it.origin.tsv"] {
        std::fs::write(
            run.join(format!(".{name}.oyster-tmp.{dead_pid}")),
            "a launch environment, half written",
        )
        .unwrap();
    }
    t.run(start_args(&root, free_port())).ok();
    assert_eq!(crate::common::temp_files(&run), Vec::<String>::new());
    t.run(["host", "stop", "--stack", "it"]).ok();
}
