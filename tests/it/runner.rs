//! The Host's launch program, `oyster host exec` (docs/behaviour.md §6a), as launchd (the simulator)
//! and direct startup run it: the identity files Oysterun's own restart waits for, read exactly
//! as its scripts read them; the stack name reaching the Host; a Host launchd restarts on its own
//! getting fresh identity files and a synced config; a second launch, a held config lock and a
//! launch that cannot become the Host. Oysterun's own entry points and installer:
//! `oysterun_entry_points.rs`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{
    args, free_port, live_environ, plistlib, real_node, Run, Stack, TestContext, BIN,
};
use crate::common::{has_all, has_none};

const STACK: &str = "rn";

/// Stack `rn`: the fixture Host under the simulator, on a free port.
fn rn() -> Stack {
    Stack::new(STACK)
}

/// `agent VERB --stack rn` with the Host's definition, verified for 10 s, settling 200 ms.
fn agent(r: &Stack, verb: &str) -> Run {
    r.t.run(r.host_args(&["agent", verb]).wait(10, 200))
}

fn pid_file(r: &Stack) -> PathBuf {
    r.run_dir().join("oysterun-host-rn.pid")
}

fn origin_file(r: &Stack) -> PathBuf {
    r.run_dir().join("oysterun-host-rn.origin.tsv")
}

/// Oysterun's `wait_for_host_identity_files`: up to 100 tries 0.2 s apart (20 s), the pid
/// from the pid file (`tr -d '[:space:]'`) equal to the `host_pid` row of the origin file
/// (`awk -F '\t' '$1 == "host_pid" { print $2; exit }'`), alive, its cwd the host dir.
fn wait_for_host_identity_files(r: &Stack, not: Option<u32>) -> Option<u32> {
    let host_dir = std::fs::canonicalize(r.root.join("host-service")).unwrap();
    for _ in 0..100 {
        let pid = pid_from_file(&pid_file(r));
        let origin_pid = origin_host_pid_from_file(&origin_file(r));
        if let (Some(pid), Some(origin_pid)) = (pid, origin_pid) {
            if pid == origin_pid {
                if let Ok(n) = pid.parse::<u32>() {
                    if Some(n) != not && alive(n) && cwd_of(n).as_deref() == Some(&*host_dir) {
                        return Some(n);
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

/// `pid_from_file`: the file's bytes without any whitespace.
fn pid_from_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.chars().filter(|c| !c.is_ascii_whitespace()).collect())
}

/// `origin_host_pid_from_file`: the second tab-separated field of the first `host_pid` row.
fn origin_host_pid_from_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split('\t');
        (f.next() == Some("host_pid")).then(|| f.next().unwrap_or("").to_owned())
    })
}

/// `kill -0`.
fn alive(pid: u32) -> bool {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
    nix::sys::signal::kill(pid, None).is_ok()
        && process(pid.as_raw().unsigned_abs()).is_none_or(|p| !p.0)
}

/// (is a zombie, cwd) of a process, through sysinfo (so this runs on macOS too).
fn process(pid: u32) -> Option<(bool, Option<PathBuf>)> {
    let mut sys = sysinfo::System::new();
    let spid = sysinfo::Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::Some(&[spid]),
        true,
        sysinfo::ProcessRefreshKind::nothing().with_cwd(sysinfo::UpdateKind::Always),
    );
    let p = sys.process(spid)?;
    Some((matches!(p.status(), sysinfo::ProcessStatus::Zombie), p.cwd().map(Path::to_path_buf)))
}

fn cwd_of(pid: u32) -> Option<PathBuf> {
    process(pid)?.1
}

/// `GET /health` as JSON, or `None` when nothing answers 200.
fn health(port: u16) -> Option<Value> {
    let (code, body) = crate::common::http_get(port, "/health")?;
    (code == 200).then_some(())?;
    serde_json::from_str(&body).ok()
}

/// Waits (bounded) for a healthy Host with a pid other than `old`.
fn wait_new_healthy(port: u16, old: u32) -> Value {
    let t0 = Instant::now();
    loop {
        if let Some(h) = health(port).filter(|h| h["pid"] != json!(old)) {
            return h;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "no new Host");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn exec_record(run_dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("oyster-exec.json")).unwrap()).unwrap()
}

#[test]
fn oysteruns_own_restart_finds_the_new_pid_in_the_identity_files() {
    let r = rn();
    agent(&r, "install").ok();
    let first = wait_for_host_identity_files(&r, None).expect("identity files after install");
    assert_eq!(r.launchd_pid(), Some(first));

    // What the Host's own restart runs (restart_oysterun.sh → start_oysterun.sh) when a
    // LaunchAgent is installed: bootout, remove the pid and origin files, bootstrap the same
    // plist, then wait up to 20 s for the identity files to name the new live pid.
    r.t.sim(&["bootout", &r.target("gui")]).ok();
    let t0 = Instant::now();
    while r.t.sim(&["print", &r.target("gui")]).code() != 113 {
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_file(pid_file(&r)).unwrap();
    std::fs::remove_file(origin_file(&r)).unwrap();
    r.t.sim(&["bootstrap", &r.domain("gui"), r.plist().to_str().unwrap()]).ok();
    let second = wait_for_host_identity_files(&r, Some(first))
        .expect("Oysterun's restart would report failure: no identity files within 20 s");
    assert_eq!(r.launchd_pid(), Some(second));
    // The identity files come before the Host listens (they are written just before the exec).
    assert_eq!(wait_new_healthy(r.port, first)["pid"], json!(second));

    // And after oyster's own restart.
    agent(&r, "restart").ok();
    let third = wait_for_host_identity_files(&r, Some(second))
        .expect("identity files after `oyster agent restart`");
    assert_eq!(r.launchd_pid(), Some(third));
}

#[test]
fn the_host_gets_its_stack_name_and_runs_as_the_launch_programs_pid() {
    let r = rn();
    agent(&r, "install").ok();
    let h = health(r.port).unwrap();
    assert_eq!(h["stack"], STACK, "OYSTERUN_ROUTEC_STACK_NAME reached the Host");
    let pid = r.launchd_pid().unwrap();
    assert_eq!(h["pid"], json!(pid), "the exec kept launchd's pid");
    let plist = plistlib(&std::fs::read(r.plist()).unwrap());
    assert_eq!(plist["ProgramArguments"], json!([BIN, "host", "exec", "--stack", STACK]));
    // Verification follows: launchd's program is oyster, the live environment is the plist's.
    let st = r.t.run(["agent", "status", "--stack", STACK, "--json"]).ok().json();
    // `live` wherever the kernel shows the Host's environment; where macOS hides it (an
    // official Node build), the launch program's record proves it (`exec`).
    assert_eq!(
        (&st["verified"], &st["env_proof"], &st["installed_by"]),
        (&json!(true), &json!(crate::common::strongest_proof(pid)), &json!("oyster")),
        "{st}"
    );
    let env = r.t.host_environ(pid);
    for (k, v) in plist["EnvironmentVariables"].as_object().unwrap() {
        assert!(env.contains(&format!("{k}={}", v.as_str().unwrap())), "{k} in {env:?}");
    }
    // An unchanged regenerate finds the loaded definition matching (program and arguments).
    agent(&r, "regenerate").ok().stdout_has_all(&["left alone"]);
}

#[test]
fn a_host_launchd_restarts_on_its_own_gets_fresh_identity_files_and_a_synced_config() {
    let r = rn();
    agent(&r, "install").ok();
    let old = wait_for_host_identity_files(&r, None).unwrap();
    let old_record = exec_record(&r.run_dir());
    let config = r.stack_dir().join("host/config.json");
    let before: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    assert_eq!(before["codex_command"], Value::Null, "{before}");
    // A provider appears after install; no oyster command runs. Then launchd alone restarts
    // the Host (kickstart -k kills it and starts the loaded definition again, as KeepAlive
    // does after a crash).
    let codex = r.t.fake_exe(&r.t.home.join(".local/bin/codex"));
    r.t.sim(&["kickstart", "-k", &r.target("gui")]).ok();
    let new = wait_for_host_identity_files(&r, Some(old)).expect("fresh identity files");
    assert_eq!(wait_new_healthy(r.port, old)["pid"], json!(new));
    let record = exec_record(&r.run_dir());
    assert_eq!(record["pid"], json!(new));
    assert_ne!(record["started_at"], Value::Null);
    assert_ne!(record, old_record);
    let after: Value = serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    assert_eq!(after["codex_command"], json!(codex), "the launch synced the config");
    let log = r.host_log();
    has_all(&log, &["config: codex_command"]);
    // The plist predates codex, so the launch says its environment differs, and starts anyway.
    has_all(&log, &["differs from what oyster generates", "agent regenerate"]);
    r.t.assert_nothing_executed();
}

#[test]
fn a_corrupt_config_is_logged_and_the_host_still_starts() {
    let r = rn();
    agent(&r, "install").ok();
    let old = wait_for_host_identity_files(&r, None).unwrap();
    std::fs::write(r.stack_dir().join("host/config.json"), "{\"port\": ").unwrap();
    r.t.sim(&["kickstart", "-k", &r.target("gui")]).ok();
    let new = wait_for_host_identity_files(&r, Some(old)).expect("the Host started");
    assert_eq!(wait_new_healthy(r.port, old)["pid"], json!(new));
    let log = r.host_log();
    has_all(&log, &["the config sync failed; the Host starts anyway", "not valid JSON"]);
}

#[test]
fn host_stop_and_status_leave_a_launchd_host_to_launchd() {
    let r = rn();
    agent(&r, "install").ok();
    let pid = wait_for_host_identity_files(&r, None).unwrap();
    let e = r.t.run(["host", "stop", "--stack", STACK]).fails_with(1).stderr();
    has_all(&e, &["launchd runs this Host", &format!("`oyster stop --stack {STACK}` stops it")]);
    assert!(alive(pid), "not signalled");
    let st = r.t.run(["host", "status", "--stack", STACK, "--json"]).ok().json();
    assert_eq!((&st["managed_by"], &st["pid"]), (&json!("launchd"), &json!(pid)), "{st}");
}

/// `host start` with the fixture on a free port for stack `dr`.
pub(crate) fn start_direct(t: &TestContext, root: &Path, port: u16) -> Run {
    t.run(args(&["host", "start"]).stack("dr").host(root).port(port).wait_secs(10))
}

#[test]
fn direct_start_runs_the_same_launch_program_and_leaves_the_same_files() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let port = free_port();
    start_direct(&t, &root, port).ok();
    let run = t.home.join(".oysterun-stacks/dr/run");
    let pid: u32 = pid_from_file(&run.join("oysterun-host-dr.pid")).unwrap().parse().unwrap();
    let h = health(port).unwrap();
    assert_eq!((&h["pid"], &h["stack"]), (&json!(pid), &json!("dr")));
    let origin = std::fs::read_to_string(run.join("oysterun-host-dr.origin.tsv")).unwrap();
    let rows: Vec<(&str, &str)> = origin.lines().map(|l| l.split_once('\t').unwrap()).collect();
    let keys: Vec<&str> = rows.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            "key",
            "started_at_utc",
            "repo_root",
            "host_dir",
            "actual_cwd",
            "config_dir",
            "host_port",
            "host_pid",
            "launch_label"
        ]
    );
    let row = |k: &str| rows.iter().find(|(key, _)| *key == k).unwrap().1;
    let host_dir = root.join("host-service");
    assert_eq!(row("repo_root"), root.to_str().unwrap());
    assert_eq!(row("host_dir"), host_dir.to_str().unwrap());
    assert_eq!(Path::new(row("actual_cwd")), std::fs::canonicalize(&host_dir).unwrap());
    assert_eq!(Path::new(row("config_dir")), t.home.join(".oysterun-stacks/dr/host"));
    assert_eq!(row("host_port"), port.to_string());
    assert_eq!(row("host_pid"), pid.to_string());
    assert_eq!(row("launch_label"), "com.oysterun.host.dr");
    let at = row("started_at_utc");
    assert!(at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T', "{at}");
    // oyster's own record: owner-only, the argv and environment it exec'd with.
    let record_path = run.join("oyster-exec.json");
    assert_eq!(std::fs::metadata(&record_path).unwrap().permissions().mode() & 0o777, 0o600);
    let rec = exec_record(&run);
    assert_eq!(rec["pid"], json!(pid));
    assert_eq!(rec["argv"], json!([real_node(), root.join("host-service/server.mjs")]));
    let mut live: Vec<String> = live_environ(pid);
    live.sort();
    let recorded: Vec<String> = rec["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
        .collect();
    // Where macOS hides a restricted Node's environment, the record is all there is to read.
    if !live.is_empty() {
        assert_eq!(recorded, live, "the record is the environment the Host has");
    }
    // The Host log says what the launch program did.
    let log =
        std::fs::read_to_string(t.home.join(".oysterun-stacks/dr/logs/oysterun-host.log")).unwrap();
    has_all(&log, &["oyster host exec (stack dr", "identity files written"]);
    has_none(&log, &["differs"]);
    t.run(["host", "stop", "--stack", "dr"]).ok();
}

/// A launch program run by hand while the stack's Host lives (a second `host exec` with the
/// Host's own environment) must not take over the identity files: they keep naming the live
/// Host, and the second Host, which cannot have the port, just exits.
#[test]
fn a_second_launch_leaves_a_live_hosts_identity_files_alone() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let port = free_port();
    start_direct(&t, &root, port).ok();
    let run = t.home.join(".oysterun-stacks/dr/run");
    let first = pid_from_file(&run.join("oysterun-host-dr.pid")).unwrap();
    let origin = std::fs::read(run.join("oysterun-host-dr.origin.tsv")).unwrap();
    let rec = exec_record(&run);
    let out = Command::new(BIN)
        .args(["host", "exec", "--stack", "dr"])
        .env_clear()
        .envs(
            rec["env"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())),
        )
        .output()
        .unwrap();
    assert!(!out.status.success(), "the second Host cannot listen");
    let err = String::from_utf8_lossy(&out.stderr);
    has_all(&err, &[&format!("names another live Host (pid {first})")]);
    assert_eq!(pid_from_file(&run.join("oysterun-host-dr.pid")).unwrap(), first);
    assert_eq!(std::fs::read(run.join("oysterun-host-dr.origin.tsv")).unwrap(), origin);
    assert_eq!(exec_record(&run), rec);
    assert_eq!(health(port).unwrap()["pid"].to_string(), first);
    t.run(["host", "stop", "--stack", "dr"]).ok();
}

#[test]
fn a_held_config_lock_never_keeps_the_host_down_the_launch_skips_the_sync_and_says_so() {
    let r = rn();
    agent(&r, "install").ok();
    let old = wait_for_host_identity_files(&r, None).unwrap();
    let config = r.stack_dir().join("host/config.json");
    let mut lock = config.clone().into_os_string();
    lock.push(".lock");
    let mut f =
        std::fs::OpenOptions::new().read(true).write(true).truncate(true).open(&lock).unwrap();
    writeln!(f, "pid {} (a suspended oyster)", std::process::id()).unwrap();
    let _held = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .unwrap();
    let before = std::fs::read(&config).unwrap();
    // A provider appears; the sync would record it, but the lock is held.
    r.t.fake_exe(&r.t.home.join(".local/bin/codex"));
    let t0 = Instant::now();
    r.t.sim(&["kickstart", "-k", &r.target("gui")]).ok();
    let new = wait_for_host_identity_files(&r, Some(old)).expect("the Host came back");
    assert_eq!(wait_new_healthy(r.port, old)["pid"], json!(new));
    assert!(t0.elapsed() < Duration::from_secs(10));
    let log = r.host_log();
    has_all(&log, &[&format!("config sync skipped: locked by pid {}", std::process::id())]);
    assert_eq!(std::fs::read(&config).unwrap(), before, "written without the lock");
}

/// Waits (bounded) until the Host log holds `text`.
fn wait_for_log(r: &Stack, text: &str) -> String {
    let t0 = Instant::now();
    loop {
        let log = r.host_log();
        if log.contains(text) {
            return log;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "never logged {text:?}:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_launch_that_cannot_become_the_host_leaves_no_identity_files_naming_a_dead_pid() {
    // The entry point gone (an Oysterun uninstalled under the plist).
    let r = rn();
    agent(&r, "install").ok();
    wait_for_host_identity_files(&r, None).unwrap();
    std::fs::rename(
        r.root.join("host-service/server.mjs"),
        r.root.join("host-service/server.mjs.moved"),
    )
    .unwrap();
    r.t.sim(&["kickstart", "-k", &r.target("gui")]).ok();
    let log = wait_for_log(&r, "no identity files were written");
    has_all(&log, &["server.mjs"]);
    for f in [pid_file(&r), origin_file(&r), r.run_dir().join("oyster-exec.json")] {
        assert!(!f.exists(), "{} names a dead pid", f.display());
    }
    std::fs::rename(
        r.root.join("host-service/server.mjs.moved"),
        r.root.join("host-service/server.mjs"),
    )
    .unwrap();
    r.t.run(["agent", "uninstall", "--stack", STACK]).ok();

    // The pinned Node deleted (a version manager removed it), reached through a link.
    let r = rn();
    let link_dir = r.t.path("nodes/bin");
    std::fs::create_dir_all(&link_dir).unwrap();
    std::os::unix::fs::symlink(real_node(), link_dir.join("node")).unwrap();
    r.t.run(
        args(&["agent", "install"])
            .stack(STACK)
            .root(&r.root)
            .node(link_dir.join("node"))
            .port(r.port)
            .wait(10, 200),
    )
    .ok();
    wait_for_host_identity_files(&r, None).unwrap();
    std::fs::remove_file(link_dir.join("node")).unwrap();
    r.t.sim(&["kickstart", "-k", &r.target("gui")]).ok();
    let log = wait_for_log(&r, "no identity files were written");
    has_all(&log, &["the pinned Node"]);
    assert!(!pid_file(&r).exists(), "the pid file names a dead pid");
}
