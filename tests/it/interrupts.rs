//! docs/behaviour.md §9 through the real binary, with real signals and real processes: a run
//! interrupted while it verifies rolls back to the last good plist and exits 128+N; a run
//! killed outright (SIGKILL) is repaired by the next one through the `pending` marker; Ctrl-C
//! during setup's npm install kills npm's whole process group and rolls setup back; and many
//! concurrent `agent regenerate`/`agent install` runs end with one verified Host.
//!
//! Every process a test starts is stopped by its pid; every test has its own HOME, stack name
//! and free port. The random points come from a seed printed on stderr
//! (`OYSTER_TEST_SEED=N` replays one).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::has_all;
use crate::common::{self, temp_files};
use crate::common::{free_port, real_node, wait_until, TestContext};

/// A small deterministic generator; the seed is printed so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn seeded(test: &str) -> Rng {
        let seed = std::env::var("OYSTER_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos()
                    .into()
            });
        eprintln!("{test}: OYSTER_TEST_SEED={seed}");
        Rng(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Sends `sig` to exactly this child's pid (never a group, never by name).
fn send(child: &Child, sig: Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    // ESRCH: it finished first; the caller's assertions say whether that was allowed.
    let _ = nix::sys::signal::kill(pid, sig);
}

/// Waits for a child at most `bound`; a child that outlives it is killed (by pid) and the test
/// fails, so a hang can never hang the suite.
fn wait_bounded(child: &mut Child, bound: Duration, what: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {bound:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process with this pid is alive (a zombie is not: it has already exited).
fn alive(pid: u32) -> bool {
    let mut sys = sysinfo::System::new();
    let spid = sysinfo::Pid::from_u32(pid);
    sys.refresh_processes(sysinfo::ProcessesToUpdate::Some(&[spid]), true);
    sys.process(spid).is_some_and(|p| {
        !matches!(p.status(), sysinfo::ProcessStatus::Zombie | sysinfo::ProcessStatus::Dead)
    })
}

/// One stack against the simulator, with three fixture roots: two healthy ones (a change of
/// root is a change of definition: `WorkingDirectory` and `OYSTERUN_REPO_ROOT`) and one whose
/// Host never answers /health (the `unhealthy` flag: 503 forever).
struct Ir {
    t: TestContext,
    name: &'static str,
    good: PathBuf,
    good2: PathBuf,
    bad: PathBuf,
    port: u16,
}

impl Ir {
    fn new(name: &'static str) -> Ir {
        let mut t = TestContext::new();
        t.use_sim();
        let good = t.fixture_root("good");
        let good2 = t.fixture_root("good2");
        let bad = t.fixture_root("bad");
        TestContext::fixture_flag(&bad, "unhealthy", "");
        Ir { t, name, good, good2, bad, port: free_port() }
    }

    /// `agent VERB --stack NAME [--root ROOT] --node-bin NODE --port P --wait W --settle-ms 200`.
    fn args(&self, verb: &str, root: Option<&Path>, wait: u64) -> Vec<String> {
        let mut a = common::args(&["agent", verb]).stack(self.name);
        if let Some(r) = root {
            a = a.root(r);
        }
        a = a.node(real_node()).port(self.port);
        if verb != "print" {
            a = a.wait(wait, 200);
        }
        a.into()
    }

    /// The plist oyster generates for a root.
    fn generated(&self, root: &Path) -> Vec<u8> {
        self.t.run(self.args("print", Some(root), 0)).ok().0.stdout
    }

    fn plist_path(&self) -> PathBuf {
        self.t.home.join(format!("Library/LaunchAgents/com.oysterun.host.{}.plist", self.name))
    }

    fn plist(&self) -> Vec<u8> {
        std::fs::read(self.plist_path()).unwrap()
    }

    fn run_dir(&self) -> PathBuf {
        self.t.home.join(format!(".oysterun-stacks/{}/run", self.name))
    }

    fn config_dir(&self) -> PathBuf {
        self.t.home.join(format!(".oysterun-stacks/{}/host", self.name))
    }

    fn last_good(&self) -> Option<Vec<u8>> {
        std::fs::read(self.run_dir().join("last-good.plist")).ok()
    }

    fn pending(&self) -> bool {
        self.run_dir().join("pending").exists()
    }

    /// Starts oyster with both streams in `<test dir>/<log>`.
    fn spawn(&self, args: &[String], log: &str) -> Child {
        let out = File::create(self.t.path(log)).unwrap();
        self.t.cmd().args(args).stdout(out.try_clone().unwrap()).stderr(out).spawn().unwrap()
    }

    fn output_of(&self, log: &str) -> String {
        std::fs::read_to_string(self.t.path(log)).unwrap_or_default()
    }

    fn status(&self) -> serde_json::Value {
        self.t.run(["agent", "status", "--stack", self.name, "--json"]).json()
    }

    /// The running Host's pid and its live `OYSTERUN_REPO_ROOT`, read from the kernel.
    fn live_root(&self) -> (u32, String) {
        let st = self.status();
        let pid = st["pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or_else(|| panic!("no running pid: {st}"));
        let root = self
            .t
            .host_environ(pid)
            .into_iter()
            .find_map(|kv| kv.strip_prefix("OYSTERUN_REPO_ROOT=").map(str::to_owned))
            .unwrap_or_default();
        (pid, root)
    }

    /// Every live Host of this stack: processes (not threads) whose environment carries its
    /// port.
    fn hosts(&self) -> Vec<u32> {
        crate::common::processes_with_env(&format!("OYSTERUN_PORT={}", self.port))
    }

    /// The stack is verified, runs `root`, has `plist` on disk and as the last good one, and
    /// no run is pending.
    #[track_caller]
    fn assert_runs(&self, root: &Path, plist: &[u8], ctx: &str) {
        let st = self.status();
        assert_eq!(st["verified"], true, "{ctx}: {st}");
        assert_eq!(self.live_root().1, root.display().to_string(), "{ctx}");
        assert!(self.plist() == plist, "{ctx}: the plist on disk is not the expected one");
        assert!(
            self.last_good().as_deref() == Some(plist),
            "{ctx}: last-good.plist is not the verified plist"
        );
        assert!(!self.pending(), "{ctx}: a pending marker was left");
    }
}

/// (a) SIGINT, SIGTERM, SIGHUP at a random point while a new definition (whose Host never
/// answers /health) is verified: the run stops waiting, restores the last good plist, says so,
/// exits 130/143/129; the old definition runs again, verified.
#[test]
fn an_interrupt_while_verifying_rolls_back_and_exits_128_plus_the_signal() {
    let ir = Ir::new("intr");
    let mut rng = Rng::seeded("interrupts");
    ir.t.run(ir.args("install", Some(&ir.good), 10)).ok();
    let good = ir.plist();
    let bad = ir.generated(&ir.bad);
    assert_ne!(good, bad);
    assert_eq!(ir.last_good().as_deref(), Some(good.as_slice()));
    let cases = [
        ("regenerate", Signal::SIGINT, 130),
        ("regenerate", Signal::SIGTERM, 143),
        ("regenerate", Signal::SIGHUP, 129),
        ("install", Signal::SIGTERM, 143),
        ("restart", Signal::SIGINT, 130),
    ];
    for (i, (verb, sig, code)) in cases.into_iter().enumerate() {
        let what = format!("{verb} + {sig}");
        let log = format!("intr-{i}.log");
        let (old_pid, _) = ir.live_root();
        let mut child = ir.spawn(&ir.args(verb, Some(&ir.bad), 10), &log);
        // The verification window opens once the new plist is on disk (it is loaded next, then
        // polled for up to --wait 10 s; this Host never answers 200).
        wait_until(Duration::from_secs(15), &format!("{what}: the new plist"), || {
            std::fs::read(ir.plist_path()).is_ok_and(|b| b == bad)
        });
        // Half the time early, while launchctl calls of the reload are in flight (a signal
        // then cuts one short); else anywhere in the first 2.5 s of the wait.
        let delay = rng.below(if i % 2 == 0 { 300 } else { 2500 });
        std::thread::sleep(Duration::from_millis(delay));
        send(&child, sig);
        let status = wait_bounded(&mut child, Duration::from_secs(40), &what);
        let out = ir.output_of(&log);
        assert_eq!(status.code(), Some(code), "{what} after {delay} ms: the exit code\n{out}");
        assert!(
            out.contains(&format!("interrupted by {sig}"))
                && out.contains("Rolling back")
                && out.contains("restored the last good plist"),
            "{what} after {delay} ms: it says it rolled back\n{out}"
        );
        ir.assert_runs(&ir.good, &good, &format!("{what} after {delay} ms"));
        assert_ne!(ir.live_root().0, old_pid, "{what}: the good Host was reloaded");
        let audit = std::fs::read_to_string(
            ir.t.home.join(format!(".oysterun-stacks/{}/logs/service-control.jsonl", ir.name)),
        )
        .unwrap();
        assert!(
            audit.contains(&format!("interrupted by {sig}")),
            "{what}: the audit log records the interrupt"
        );
    }
    assert_eq!(ir.hosts().len(), 1, "one Host runs");
}

/// (b) SIGKILL at random points of a change over several rounds. The plist on disk is always
/// a whole plist (old or new). A bad change killed half-way is repaired by the next
/// `agent regenerate`: with the bad definition still installed it re-verifies (a `pending`
/// marker, never "unchanged") and rolls back (exit 1); when the user takes the change back it
/// exits 0 with the good Host. A good change killed half-way is finished by the next run (or
/// had already verified). Four rounds take each of those paths once; the kill at each step
/// boundary is `killed_at_every_step`'s (deterministic); this one kills mid-step too.
#[test]
fn sigkill_at_random_points_is_repaired_by_the_next_run() {
    let ir = Ir::new("kill");
    let mut rng = Rng::seeded("sigkill");
    ir.t.run(ir.args("install", Some(&ir.good), 10)).ok();
    let mut cur_root = ir.good.clone();
    let mut cur = ir.plist();
    let bad = ir.generated(&ir.bad);
    let mut saw_pending = 0;
    for round in 0..4u32 {
        let bad_round = round % 2 == 0;
        let new_root = if bad_round {
            ir.bad.clone()
        } else if cur_root == ir.good {
            ir.good2.clone()
        } else {
            ir.good.clone()
        };
        let new = if bad_round { bad.clone() } else { ir.generated(&new_root) };
        let delay = rng.below(if bad_round { 3500 } else { 2500 });
        let ctx = format!(
            "round {round} ({} change, SIGKILL after {delay} ms)",
            if bad_round { "bad" } else { "good" }
        );
        let log = format!("kill-{round}.log");
        let mut child = ir.spawn(&ir.args("regenerate", Some(&new_root), 10), &log);
        std::thread::sleep(Duration::from_millis(delay));
        send(&child, Signal::SIGKILL);
        wait_bounded(&mut child, Duration::from_secs(30), &ctx);
        let on_disk = ir.plist();
        assert!(
            on_disk == cur || on_disk == new,
            "{ctx}: the plist on disk is neither the old nor the new one"
        );
        assert!(temp_files(ir.plist_path().parent().unwrap()).len() <= 1, "{ctx}");
        let pending = ir.pending();
        saw_pending += usize::from(pending);
        if on_disk == bad {
            assert!(pending, "{ctx}: a bad plist is on disk without a pending marker");
            let st = ir.status();
            assert_eq!(st["verified"], false, "{ctx}: status of an unverified Host: {st}");
        }
        if bad_round && round % 4 == 0 {
            // The user runs regenerate again, changing nothing: the installed (bad) definition
            // must be verified again, not called "unchanged", and rolled back.
            let r = ir.t.run(ir.args("regenerate", None, 3));
            let out = format!("{}{}", r.stdout(), r.stderr());
            if on_disk == bad {
                assert_eq!(r.code(), 1, "{ctx}: the re-verification fails\n{out}");
                assert!(
                    out.contains("restored the last good plist"),
                    "{ctx}: it rolled back\n{out}"
                );
            } else {
                assert_eq!(r.code(), 0, "{ctx}\n{out}");
            }
            assert!(
                !out.contains("unchanged; the running Host is left alone") || !pending,
                "{ctx}: a pending run was called unchanged\n{out}"
            );
            if pending {
                assert!(out.contains("A previous oyster run stopped"), "{ctx}\n{out}");
            }
            ir.assert_runs(&cur_root, &cur, &ctx);
        } else if bad_round {
            // The user takes the bad change back: exit 0, the good definition verified.
            let r = ir.t.run(ir.args("regenerate", Some(&cur_root), 10));
            assert_eq!(r.code(), 0, "{ctx}\n{}{}", r.stdout(), r.stderr());
            ir.assert_runs(&cur_root, &cur, &ctx);
        } else {
            // A good change: the next run finishes it (or finds it verified) and exits 0.
            let r = ir.t.run(ir.args("regenerate", Some(&new_root), 10));
            assert_eq!(r.code(), 0, "{ctx}\n{}{}", r.stdout(), r.stderr());
            ir.assert_runs(&new_root, &new, &ctx);
            cur_root = new_root;
            cur = new;
        }
        assert_eq!(ir.hosts().len(), 1, "{ctx}: one Host runs");
    }
    eprintln!("sigkill: {saw_pending}/4 kills left a pending marker");
    assert!(temp_files(ir.plist_path().parent().unwrap()).is_empty());
    assert!(temp_files(&ir.run_dir()).is_empty());
}

/// (c) Ctrl-C while setup's npm install runs: npm's whole process group dies (a grandchild
/// that would write a marker later never does), the rollback runs `npm uninstall`, config.json
/// keeps its bytes, exit 130, and no process is left.
#[test]
fn ctrl_c_during_setups_npm_install_kills_its_group_and_rolls_back() {
    let mut rng = Rng::seeded("setup-ctrl-c");
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    let bin = t.node_prefix();
    let log = t.path("npm.log");
    let marker = t.path("grandchild-finished");
    let pids = t.path("npm.pids");
    // `install`: record, start a grandchild that would finish the install later, then take
    // long; `uninstall`: record and succeed.
    let npm = format!(
        "#!/bin/sh\necho \"$*\" >> '{log}'\n\
         if [ \"$1\" = install ]; then\n\
           ( sleep 2; touch '{marker}' ) &\n\
           echo \"npm $$ grandchild $!\" >> '{pids}'\n\
           sleep 30\n\
         fi\nexit 0\n",
        log = log.display(),
        marker = marker.display(),
        pids = pids.display(),
    );
    std::fs::write(bin.join("npm"), npm).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("npm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = t.home.join(".oysterun-stacks/st/host/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let before = br#"{"history": {"s1": "keep"}, "port": 4444}"#;
    std::fs::write(&config, before).unwrap();
    t.extra_env.push(("OYSTER_LAUNCHCTL".into(), "none".into()));
    let out = File::create(t.path("setup.log")).unwrap();
    let mut child = t
        .cmd()
        .args([
            "setup",
            "--stack",
            "st",
            "--root",
            root.to_str().unwrap(),
            "--node-bin",
            bin.join("node").to_str().unwrap(),
            "--install-providers",
            "--no-start",
        ])
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    wait_until(Duration::from_secs(15), "npm install to start", || {
        std::fs::read_to_string(&pids).is_ok_and(|s| s.contains("grandchild"))
    });
    let delay = rng.below(500);
    std::thread::sleep(Duration::from_millis(delay));
    send(&child, Signal::SIGINT);
    let status = wait_bounded(&mut child, Duration::from_secs(20), "setup after Ctrl-C");
    let output = std::fs::read_to_string(t.path("setup.log")).unwrap();
    assert_eq!(status.code(), Some(130), "after {delay} ms\n{output}");
    let recorded = std::fs::read_to_string(&pids).unwrap();
    let npm_pids: Vec<u32> = recorded.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(npm_pids.len(), 2, "{recorded}");
    for pid in &npm_pids {
        assert!(!alive(*pid), "pid {pid} of npm's group outlived the cancel");
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("uninstall -g --prefix")
                && l.contains("@anthropic-ai/claude-code")),
        "the rollback ran npm uninstall for the interrupted install:\n{calls}\n{output}"
    );
    assert!(
        !calls.lines().any(|l| l.starts_with("install") && l.contains("@openai/codex")),
        "nothing was installed after the cancel:\n{calls}"
    );
    has_all(&output, &["interrupted by SIGINT", "uninstalled"]);
    assert_eq!(std::fs::read(&config).unwrap(), before, "config.json bytes");
    assert!(!t.home.join("OysterunAgents").exists(), "no AgentFolder");
    // The grandchild would have written its marker 2 s after it started; once no process of
    // this test is left, nothing can write it any more.
    wait_until(Duration::from_secs(10), "npm's group to be gone", || t.own_processes().is_empty());
    assert!(!marker.exists(), "npm's grandchild kept running after the cancel");
    assert_eq!(t.own_processes(), Vec::<u32>::new(), "processes left");
}

/// §9 "one writer per stack": 4 concurrent `agent regenerate` over 20 rounds, each round a
/// real change (a provider's manual directory alternates), then 4 concurrent `agent install`
/// on a fresh stack. Every run exits 0; one verified Host at the end; no temp file left; the
/// ones that waited named the holder's pid.
#[test]
fn concurrent_regenerates_and_installs_all_succeed_with_one_verified_host() {
    const N: usize = 4;
    const ROUNDS: usize = 20;
    let t0 = Instant::now();
    let ir = Ir::new("conc");
    let dirs: Vec<PathBuf> = ["pa", "pb"].iter().map(|d| ir.t.path(d)).collect();
    for d in &dirs {
        ir.t.fake_exe(&d.join("codex"));
    }
    ir.t.run(ir.args("install", Some(&ir.good), 10)).ok();
    let mut named = 0;
    let mut reloads = 0;
    for round in 0..ROUNDS {
        let d = &dirs[round % 2];
        ir.t.run([
            "providers",
            "set",
            "codex",
            d.join("codex").to_str().unwrap(),
            "--stack",
            ir.name,
        ])
        .ok();
        let children: Vec<(Child, String)> = (0..N)
            .map(|i| {
                let log = format!("conc-{round}-{i}.log");
                (ir.spawn(&ir.args("regenerate", None, 10), &log), log)
            })
            .collect();
        let pids: Vec<u32> = children.iter().map(|(c, _)| c.id()).collect();
        for (mut c, log) in children {
            let status = wait_bounded(&mut c, Duration::from_secs(60), "a concurrent regenerate");
            let out = ir.output_of(&log);
            assert_eq!(status.code(), Some(0), "round {round}:\n{out}");
            reloads += usize::from(out.contains("reloaded (bootout, bootstrap)"));
            if let Some(line) = out.lines().find(|l| l.contains("waiting for another oyster")) {
                let holder: u32 = line
                    .split("pid ")
                    .nth(1)
                    .and_then(|s| s.split(|ch: char| !ch.is_ascii_digit()).next())
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("round {round}: no holder pid in {line:?}"));
                assert!(
                    pids.contains(&holder) && holder != c.id(),
                    "round {round}: the holder named ({holder}) is not another run of this round {pids:?}: {line}"
                );
                named += 1;
            }
        }
        let path_env = ir.status();
        assert_eq!(path_env["verified"], true, "round {round}: {path_env}");
    }
    assert_eq!(reloads, ROUNDS, "each round reloaded exactly once");
    assert!(named >= ROUNDS, "the waiting runs named the holder ({named} lines)");
    let live = ir.t.host_environ(ir.live_root().0);
    let want = dirs[(ROUNDS - 1) % 2].display().to_string();
    assert!(
        live.iter().any(|kv| kv.starts_with("PATH=") && kv.split(':').any(|d| d == want)),
        "the last change runs: {live:?}"
    );
    assert_eq!(ir.hosts().len(), 1, "exactly one Host");
    for dir in [ir.plist_path().parent().unwrap().to_owned(), ir.config_dir(), ir.run_dir()] {
        assert_eq!(temp_files(&dir), Vec::<String>::new(), "{}", dir.display());
    }

    // 4 concurrent installs from scratch.
    let fresh = Ir::new("fresh");
    let children: Vec<(Child, String)> = (0..N)
        .map(|i| {
            let log = format!("install-{i}.log");
            (fresh.spawn(&fresh.args("install", Some(&fresh.good), 10), &log), log)
        })
        .collect();
    let mut waited = 0;
    for (mut c, log) in children {
        let status = wait_bounded(&mut c, Duration::from_secs(60), "a concurrent install");
        let out = fresh.output_of(&log);
        assert_eq!(status.code(), Some(0), "{out}");
        waited += usize::from(out.contains("waiting for another oyster (pid "));
    }
    assert!(waited >= 1, "the waiting installs said for whom");
    assert_eq!(fresh.status()["verified"], true);
    assert_eq!(fresh.hosts().len(), 1, "exactly one Host");
    for dir in
        [fresh.plist_path().parent().unwrap().to_owned(), fresh.config_dir(), fresh.run_dir()]
    {
        assert_eq!(temp_files(&dir), Vec::<String>::new(), "{}", dir.display());
    }
    eprintln!("concurrency: {:?} for {ROUNDS} rounds of {N} and {N} installs", t0.elapsed());
}
