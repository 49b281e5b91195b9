//! Special files where oyster expects regular ones, through the binary as a hostile or confused
//! user leaves them (docs/behaviour.md §9): a FIFO config, a plist linked to `/dev/zero` or a
//! FIFO, a symlinked audit log, a Host log that is a FIFO or a symlink (before a command and
//! swapped in mid-verification), and a 100 MB config. Every run is bounded (`bounded.rs`): a
//! command that hangs is killed by its pid and the test fails.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::bounded::bounded;
use crate::common::{doctor_check, free_port, TestContext};

/// §9: a FIFO where config.json belongs makes every command refuse at once (exit 2; doctor
/// reports the failed check and exits 1) instead of blocking on it forever — and not while
/// holding the stack's lock.
#[test]
fn a_fifo_config_is_refused_at_once_by_every_command() {
    let t = TestContext::with_pinned_host_no_launchd();
    std::fs::create_dir_all(t.config_path().parent().unwrap()).unwrap();
    nix::unistd::mkfifo(&t.config_path(), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for args in [
        vec!["config", "sync"],
        vec!["providers", "status"],
        vec!["providers", "status", "--json"],
        vec!["providers", "set", "claude", "/x/claude"],
        vec!["agent", "print"],
        vec!["agent", "regenerate", "--no-restart"],
        vec!["config", "show"],
        vec!["setup", "--no-start"],
        vec!["doctor"],
        vec!["doctor", "--json"],
    ] {
        let r = bounded(&t, &args, &[], Duration::from_secs(10));
        let e = r.stderr();
        assert!(r.took < Duration::from_secs(2), "{args:?} took {:?}", r.took);
        if args[0] == "doctor" {
            // doctor reports: the config check fails, naming the FIFO; exit 1 (a failed check).
            assert_eq!(r.code, Some(1), "{args:?}: {e}");
            assert!(
                r.stdout.contains("FIFO") && r.stdout.contains("config.json"),
                "{args:?}: {}",
                r.stdout
            );
        } else {
            assert_eq!(r.code, Some(2), "{args:?}: {e}");
            assert!(e.contains("FIFO") && e.contains("config.json"), "{args:?}: {e}");
        }
    }
    let m = std::fs::symlink_metadata(t.config_path()).unwrap();
    assert!(m.file_type().is_fifo(), "the FIFO is left as it was");
}

/// §9: a plist that is a symlink to /dev/zero or a FIFO is never read without limit or blocked
/// on: `agent regenerate --no-restart` refuses at once (exit 2) and writes nothing through the
/// link; `doctor`, `agent print` and `agent status` return at once, doctor naming the file.
#[test]
fn a_plist_linked_to_dev_zero_or_a_fifo_is_refused_at_once() {
    for kind in ["symlink to /dev/zero", "FIFO"] {
        let t = TestContext::with_pinned_host_no_launchd();
        // A port from the allocator, not production's 8802 (which may be held here).
        t.write_config(&format!("{{\"port\": {}}}", free_port()));
        let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.plist");
        std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
        if kind == "FIFO" {
            nix::unistd::mkfifo(&plist, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        } else {
            std::os::unix::fs::symlink("/dev/zero", &plist).unwrap();
        }
        let word = if kind == "FIFO" { "FIFO" } else { "symlink" };
        let r = bounded(&t, &["agent", "regenerate", "--no-restart"], &[], Duration::from_secs(10));
        assert_eq!(r.code, Some(2), "{kind}: {}", r.stderr());
        assert!(r.stderr().contains(word), "{kind}: {}", r.stderr());
        assert!(r.took < Duration::from_secs(2), "{kind}: took {:?}", r.took);
        let r = bounded(&t, &["doctor", "--json"], &[], Duration::from_secs(10));
        assert!(r.took < Duration::from_secs(2), "{kind}: doctor took {:?}", r.took);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let check = doctor_check(&doc, "plist");
        assert_eq!(check["status"], "fail", "{kind}: doctor's plist check: {check}");
        assert!(
            check["detail"].as_str().unwrap().contains(word),
            "{kind}: doctor names what is wrong: {check}"
        );
        for args in [vec!["agent", "print"], vec!["agent", "status", "--json"]] {
            let r = bounded(&t, &args, &[], Duration::from_secs(10));
            assert!(r.took < Duration::from_secs(2), "{kind}: {args:?} took {:?}", r.took);
            assert!(r.code.is_some_and(|c| c <= 1), "{kind}: {args:?}: {}", r.stderr());
        }
        let m = std::fs::symlink_metadata(&plist).unwrap();
        if kind == "FIFO" {
            assert!(m.file_type().is_fifo());
        } else {
            assert_eq!(std::fs::read_link(&plist).unwrap(), Path::new("/dev/zero"));
        }
    }
}

/// §9 and issue 12 item 10: the audit log is never appended through a symlink (the link's
/// target keeps its bytes; the failure is a warning on stderr, not a failed command), and it is
/// rotated at 1 MiB into `service-control.jsonl.1`, one old file kept.
#[test]
fn the_audit_log_never_follows_a_symlink_and_rotates_at_a_size() {
    let mut t = TestContext::new();
    t.use_sim();
    let logs = t.home.join(".oysterun-stacks/au/logs");
    std::fs::create_dir_all(&logs).unwrap();
    let audit = logs.join("service-control.jsonl");
    let victim = t.path("victim.txt");
    std::fs::write(&victim, "keep\n").unwrap();
    std::os::unix::fs::symlink(&victim, &audit).unwrap();
    let uninstall = ["agent", "uninstall", "--stack", "au"];
    // An installed plist (never loaded), so uninstall has something to do and records it.
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.au.plist");
    let put_plist = || {
        std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
        std::fs::write(&plist, "<plist/>").unwrap();
    };
    put_plist();
    let r = bounded(&t, &uninstall, &[], Duration::from_secs(20));
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n", "appended through the link");
    assert!(
        r.stderr().contains("warning") && r.stderr().contains("service-control.jsonl"),
        "the skipped audit line is said: {}",
        r.stderr()
    );
    assert!(std::fs::symlink_metadata(&audit).unwrap().file_type().is_symlink());

    // Rotation: a log over 1 MiB moves to `.1` (replacing an older `.1`) before the next line.
    std::fs::remove_file(&audit).unwrap();
    let big = "{\"old\": true}\n".repeat((1 << 20) / 14 + 1);
    std::fs::write(&audit, &big).unwrap();
    std::fs::write(logs.join("service-control.jsonl.1"), "oldest\n").unwrap();
    put_plist();
    bounded(&t, &uninstall, &[], Duration::from_secs(20));
    assert_eq!(std::fs::read_to_string(logs.join("service-control.jsonl.1")).unwrap(), big);
    let fresh = std::fs::read_to_string(&audit).unwrap();
    assert!(
        !fresh.is_empty() && fresh.len() < 4096 && fresh.contains("\"action\":\"uninstall\""),
        "{fresh}"
    );
    let names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("service-control"))
        .collect();
    assert_eq!(names.len(), 2, "one old file kept: {names:?}");
}

/// §9: `host start` never appends the Host log through a symlink, and a FIFO there does not
/// block it; nothing is left running.
#[test]
fn host_start_never_follows_a_symlinked_or_fifo_host_log() {
    for kind in ["symlink", "FIFO"] {
        let t = TestContext::with_pinned_host_no_launchd();
        let logs = t.home.join(".oysterun-stacks/hl/logs");
        std::fs::create_dir_all(&logs).unwrap();
        let log = logs.join("oysterun-host.log");
        let victim = t.path("victim.log");
        std::fs::write(&victim, "keep\n").unwrap();
        if kind == "FIFO" {
            nix::unistd::mkfifo(&log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        } else {
            std::os::unix::fs::symlink(&victim, &log).unwrap();
        }
        let port = free_port().to_string();
        let r = bounded(
            &t,
            &["host", "start", "--stack", "hl", "--port", &port, "--wait", "5"],
            &[],
            Duration::from_secs(15),
        );
        assert_eq!(r.code, Some(2), "{kind}: {}", r.stderr());
        assert!(r.took < Duration::from_secs(2), "{kind}: took {:?}", r.took);
        assert!(r.stderr().contains("oysterun-host.log"), "{kind}: {}", r.stderr());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n", "{kind}");
        assert_eq!(t.own_processes(), Vec::<u32>::new(), "{kind}: a Host was left running");
    }
}

/// Makes `log` a FIFO or a symlink to `victim` (what a hostile or confused user leaves there).
fn make_special_log(kind: &str, log: &Path, victim: &Path) {
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    if kind == "FIFO" {
        nix::unistd::mkfifo(log, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    } else {
        std::os::unix::fs::symlink(victim, log).unwrap();
    }
}

/// §9, the issue-12 review: a Host log that is a FIFO made `agent install` hang (launchd — the
/// simulator — opens it when it spawns the Host, and every launchctl call waited behind it); a
/// symlink sends the Host's output to its target. Every command that writes or loads the
/// definition (`agent install`, `regenerate`, `restart`, `start`, `setup`, and `host start`)
/// refuses it with exit 2 at once, naming the log and the fix, before writing or loading
/// anything; a running Host is left alone; `doctor` fails a check naming it; `uninstall` still
/// works.
#[test]
fn every_command_that_loads_refuses_a_fifo_or_symlinked_host_log_before_anything() {
    for kind in ["symlink", "FIFO"] {
        let t = TestContext::with_pinned_host();
        let port = free_port().to_string();
        let host = ["--stack", "hl", "--port", &port];
        let timing = ["--wait", "10", "--settle-ms", "200"];
        let stack_dir = t.home.join(".oysterun-stacks/hl");
        let log = stack_dir.join("logs/oysterun-host.log");
        let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.hl.plist");
        let victim = t.path("victim.log");
        std::fs::write(&victim, "keep\n").unwrap();
        let refused = |args: &[&str], what: &str| {
            let r = bounded(&t, args, &[], Duration::from_secs(20));
            let e = r.stderr();
            assert_eq!(r.code, Some(2), "{kind} {what}: {e}");
            assert!(r.took < Duration::from_secs(3), "{kind} {what} took {:?}", r.took);
            assert!(
                e.contains("oysterun-host.log")
                    && e.contains(if kind == "FIFO" { "FIFO" } else { "symlink" })
                    && e.contains("hint: remove it (`rm "),
                "{kind} {what} names the log and the fix: {e}"
            );
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n", "{kind} {what}");
        };

        // A fresh stack: refused before the config sync creates anything or launchd is asked.
        make_special_log(kind, &log, &victim);
        for verb in
            [&["agent", "install"][..], &["agent", "regenerate"], &["setup"], &["host", "start"]]
        {
            refused(&[verb, &host, &timing[..2]].concat(), &verb.join(" "));
            assert!(!plist.exists(), "{kind} {verb:?} wrote the plist");
            assert!(
                !stack_dir.join("host/config.json").exists(),
                "{kind} {verb:?} synced the config before refusing"
            );
            assert_eq!(t.own_processes(), Vec::<u32>::new(), "{kind} {verb:?}");
        }

        // An installed, running Host whose log is replaced afterwards: left alone.
        std::fs::remove_file(&log).unwrap();
        let r = bounded(
            &t,
            &[&["agent", "install"][..], &host, &timing].concat(),
            &[],
            Duration::from_secs(30),
        );
        assert_eq!(r.code, Some(0), "{kind}: {}", r.stderr());
        let status = || {
            let r = bounded(
                &t,
                &["agent", "status", "--stack", "hl", "--json"],
                &[],
                Duration::from_secs(20),
            );
            serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()
        };
        let pid = status()["pid"].as_u64().unwrap();
        std::fs::rename(&log, stack_dir.join("logs/kept.log")).unwrap();
        make_special_log(kind, &log, &victim);
        let plist_before = std::fs::read(&plist).unwrap();
        for verb in [
            &["agent", "regenerate"][..],
            &["agent", "restart"],
            &["agent", "start"],
            &["agent", "install"],
        ] {
            refused(&[verb, &host, &timing].concat(), &verb.join(" "));
            assert_eq!(std::fs::read(&plist).unwrap(), plist_before, "{kind} {verb:?}");
            let st = status();
            assert_eq!(
                (st["pid"].as_u64(), st["verified"].as_bool()),
                (Some(pid), Some(true)),
                "{kind} {verb:?} touched the running Host"
            );
        }
        let r = bounded(&t, &["doctor", "--stack", "hl", "--json"], &[], Duration::from_secs(20));
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let check = doctor_check(&doc, "host log");
        assert_eq!(check["status"], "fail", "{kind}: {check}");
        assert!(check["fix"].as_str().unwrap().contains("rm "), "{kind}: {check}");
        let r = bounded(&t, &["agent", "uninstall", "--stack", "hl"], &[], Duration::from_secs(20));
        assert_eq!(r.code, Some(0), "{kind}: uninstall: {}", r.stderr());
        assert!(!plist.exists());
        t.wait_no_processes();
        let m = std::fs::symlink_metadata(&log).unwrap();
        assert!(
            m.file_type().is_fifo() || m.file_type().is_symlink(),
            "{kind}: the special file is left as it was"
        );
    }
}

/// §9: the Host-log tail a failed verification prints is read only from a regular file: when
/// the log is swapped for a FIFO or a symlink while `agent install` or `host start` waits for a
/// Host that never answers /health, the failure is reported at once (it used to block forever
/// on the FIFO) and the symlink's target is never shown.
#[test]
fn a_host_log_swapped_for_a_fifo_or_symlink_mid_verification_is_never_read_through() {
    for (verb, kind) in [
        ("agent install", "FIFO"),
        ("agent install", "symlink"),
        ("host start", "FIFO"),
        ("host start", "symlink"),
    ] {
        let t = TestContext::with_pinned_host();
        TestContext::fixture_flag(&t.host_root(), "unhealthy", "");
        let port = free_port().to_string();
        let logs = t.home.join(".oysterun-stacks/sw/logs");
        let log = logs.join("oysterun-host.log");
        let victim = t.path("victim.log");
        std::fs::write(&victim, "VICTIM-CONTENT-NOT-FOR-THE-TERMINAL\n").unwrap();
        // Once the Host has written to its log, swap the path for the special file.
        let swapper = {
            let (log, logs, victim, kind) = (log.clone(), logs.clone(), victim.clone(), kind);
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while !std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("fixture host listening")
                {
                    assert!(t0.elapsed() < Duration::from_secs(20), "the Host never logged");
                    std::thread::sleep(Duration::from_millis(20));
                }
                std::fs::rename(&log, logs.join("swapped-out.log")).unwrap();
                make_special_log(kind, &log, &victim);
            })
        };
        let mut args: Vec<&str> = verb.split(' ').collect();
        args.extend(["--stack", "sw", "--port", &port, "--wait", "3"]);
        let r = bounded(&t, &args, &[], Duration::from_secs(40));
        swapper.join().unwrap();
        let e = r.stderr();
        assert_eq!(r.code, Some(1), "{verb} {kind}: {e}");
        assert!(
            e.contains("503") && e.contains("(not shown: ") && e.contains(kind),
            "{verb} {kind}: the tail says why it is not shown: {e}"
        );
        assert!(!e.contains("VICTIM"), "{verb} {kind}: {e}");
        t.wait_no_processes();
    }
}

/// Issue 12 item 10 and §9: a 100 MB config.json is refused (exit 2, file named) in well under
/// a second by every command, without reading it (peak RSS stays small), and is left untouched.
#[test]
fn a_100_mb_config_is_refused_at_once_without_reading_it() {
    let t = TestContext::with_pinned_host_no_launchd();
    std::fs::create_dir_all(t.config_path().parent().unwrap()).unwrap();
    {
        use std::io::Write;
        let mut f = File::create(t.config_path()).unwrap();
        f.write_all(b"{\"x\": \"").unwrap();
        // Sparse: as big as 100 MB to whoever reads it, without costing the disk.
        f.set_len(100_000_000).unwrap();
    }
    let meta = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.len(), m.mtime(), m.mtime_nsec(), m.ino())
    };
    let before = meta(&t.config_path());
    let gnu_time = Path::new("/usr/bin/time").is_file();
    for args in [
        vec!["config", "sync"],
        vec!["config", "show"],
        vec!["providers", "status"],
        vec!["providers", "set", "claude", "/x/claude"],
        vec!["agent", "print"],
        vec!["agent", "regenerate", "--no-restart"],
        vec!["setup", "--no-start"],
        vec!["doctor"],
    ] {
        let r = bounded(&t, &args, &[], Duration::from_secs(10));
        assert!(r.took < Duration::from_secs(2), "{args:?} took {:?}", r.took);
        let expect = if args[0] == "doctor" { 1 } else { 2 };
        assert_eq!(r.code, Some(expect), "{args:?}: {}", r.stderr());
        let said = format!("{}{}", r.stdout, r.stderr());
        assert!(said.contains("config.json") && said.contains("larger than"), "{args:?}: {said}");
        assert_eq!(meta(&t.config_path()), before, "{args:?} touched the file");
        if gnu_time {
            // Peak RSS, measured by time(1) around the same command: GNU time's `-f %M` is in
            // KiB; macOS's BSD time has no `-f`, and its `-l` prints getrusage(2)'s
            // `ru_maxrss`, which is in bytes there, as "N  maximum resident set size".
            let base = t.cmd();
            let rss_flags: &[&str] =
                if cfg!(target_os = "macos") { &["-l"] } else { &["-f", "%M"] };
            let out = std::process::Command::new("/usr/bin/time")
                .args(rss_flags)
                .arg(crate::common::BIN)
                .args(&args)
                .env_clear()
                .envs(base.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
                .current_dir(t.path("runs"))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let kb: u64 = if cfg!(target_os = "macos") {
                err.lines()
                    .find(|l| l.trim_end().ends_with("maximum resident set size"))
                    .and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
                    .map(|bytes| bytes / 1024)
            } else {
                err.lines().last().and_then(|l| l.trim().parse().ok())
            }
            .unwrap_or_else(|| panic!("{args:?}: no peak RSS in time's output: {err}"));
            assert!(kb < 64 * 1024, "{args:?}: peak RSS {kb} KiB");
        }
    }
}
