//! Crash and concurrency torture, bounded to seconds: SIGKILL at random points of config and
//! plist writes (always the old or the new bytes, never a torn file, no temp files piling up),
//! and many concurrent writers (no lost update, valid final files).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::common::temp_files;
use crate::common::TestContext;

/// A small deterministic generator, so a failing run can be replayed.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn kill_after(t: &TestContext, args: &[String], micros: u64) {
    let mut child = t.spawn(args, Stdio::inherit(), Stdio::null(), Stdio::null());
    std::thread::sleep(Duration::from_micros(micros));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn sigkill_during_config_writes_never_tears_the_file() {
    let t = TestContext::new();
    t.run(["providers", "set", "claude", "/v/0/claude"]).ok();
    let mut rng = Lcg(0x5eed);
    let mut completed = 0;
    for i in 1..=250u64 {
        let old = std::fs::read(t.config_path()).unwrap();
        let new = format!("/v/{i}/claude");
        kill_after(
            &t,
            &["providers".into(), "set".into(), "claude".into(), new.clone()],
            rng.next(4000),
        );
        let bytes = std::fs::read(t.config_path()).unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("torn at {i}: {e}"));
        if v["claude_command"] == new.as_str() {
            completed += 1;
        } else {
            assert_eq!(bytes, old, "iteration {i}: neither old nor new");
        }
        assert!(temp_files(&t.home.join(".oysterun")).len() <= 1, "temp files pile up");
    }
    eprintln!("{completed}/250 writes completed before SIGKILL");
    t.run(["providers", "set", "claude", "/final/claude"]).ok();
    assert!(temp_files(&t.home.join(".oysterun")).is_empty());
}

#[test]
fn sigkill_during_plist_writes_leaves_a_whole_plist() {
    let t = TestContext::with_pinned_host_no_launchd();
    // A port from the allocator, not production's 8802 (which may be held on this machine).
    t.write_config(&format!("{{\"port\": {}}}", crate::common::free_port()));
    let dirs: Vec<PathBuf> = ["a", "b"].iter().map(|d| t.path(d)).collect();
    let mut variants = vec![];
    for d in &dirs {
        t.fake_exe(&d.join("codex"));
        t.set_provider("codex", &d.join("codex")).ok();
        variants.push(t.run(["agent", "print"]).ok().0.stdout);
    }
    assert_ne!(variants[0], variants[1]);
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.plist");
    t.run(["agent", "regenerate", "--no-restart"]).ok();
    let mut rng = Lcg(0xbeef);
    for i in 0..150usize {
        let d = &dirs[i % 2];
        t.set_provider("codex", &d.join("codex")).ok();
        kill_after(
            &t,
            &["agent".into(), "regenerate".into(), "--no-restart".into()],
            rng.next(6000),
        );
        let bytes = std::fs::read(&plist).unwrap();
        assert!(
            variants.contains(&bytes),
            "iteration {i}: the plist is not a whole generated plist"
        );
        assert!(temp_files(plist.parent().unwrap()).len() <= 1);
    }
    t.run(["agent", "regenerate", "--no-restart"]).ok();
    assert!(temp_files(plist.parent().unwrap()).is_empty());
}

#[test]
fn concurrent_set_sync_and_regenerate_lose_no_update() {
    let t = TestContext::with_pinned_host_no_launchd();
    t.write_config(&format!(
        r#"{{"history": {{"s1": "keep"}}, "port": {}}}"#,
        crate::common::free_port()
    ));
    const ROUNDS: usize = 25;
    std::thread::scope(|s| {
        let t = &t;
        let run = move |args: Vec<String>| {
            let out = t.cmd().args(&args).output().unwrap();
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        s.spawn(move || {
            (0..ROUNDS).for_each(|i| {
                run(vec![
                    "providers".into(),
                    "set".into(),
                    "claude".into(),
                    format!("/c/{i}/claude"),
                ])
            })
        });
        s.spawn(move || {
            (0..ROUNDS).for_each(|i| {
                run(vec!["providers".into(), "set".into(), "codex".into(), format!("/x/{i}/codex")])
            })
        });
        s.spawn(move || (0..ROUNDS).for_each(|_| run(vec!["config".into(), "sync".into()])));
        s.spawn(move || {
            (0..ROUNDS)
                .for_each(|_| run(vec!["agent".into(), "regenerate".into(), "--no-restart".into()]))
        });
    });
    let cfg = t.read_config();
    assert_eq!(cfg["claude_command"], format!("/c/{}/claude", ROUNDS - 1));
    assert_eq!(cfg["codex_command"], format!("/x/{}/codex", ROUNDS - 1));
    assert_eq!(cfg["history"]["s1"], "keep");
    // The plist on disk is exactly what the generator makes of the final config.
    t.run(["agent", "regenerate", "--no-restart"]).ok();
    let plist = std::fs::read(t.home.join("Library/LaunchAgents/com.oysterun.host.plist")).unwrap();
    assert_eq!(plist, t.run(["agent", "print"]).ok().0.stdout);
    crate::common::plistlib(&plist);
    assert!(temp_files(&t.home.join(".oysterun")).is_empty());
}
