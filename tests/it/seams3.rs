//! Issue 30 items 4 and 7: the Host's own writes to `config.json` during oyster's write are
//! merged, not lost; and a refused verb writes nothing, settings included.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::common::TestContext;

/// The Host rewrites `config.json` (in place as Node's `writeFileSync` does, or by a rename)
/// while oyster's temp file is being synced (slowed by the debug-build hook, standing in for
/// macOS's full fsync): oyster looks again right before its rename and merges again, so both
/// the Host's key and oyster's change are kept.
#[test]
fn a_hosts_config_write_during_oysters_fsync_is_merged_not_lost() {
    for how in ["in place", "by rename"] {
        let mut t = TestContext::new();
        t.write_config("{\n  \"port\": 8802\n}\n");
        let marker = t.path("in-fsync");
        t.extra_env.push((
            "OYSTER_TEST_SLOW_FSYNC".into(),
            marker.display().to_string(),
        ));
        let id = crate::common::provider_ids()[0].clone();
        let child = t
            .cmd()
            .args(["providers", "set", &id, "/opt/tools/bin/tool"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while !marker.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{how}: oyster never reached its fsync"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let host = b"{\n  \"port\": 8802,\n  \"host_key\": \"written by the Host\"\n}\n";
        let cfg_path = t.config_path();
        if how == "in place" {
            let ino = std::fs::metadata(&cfg_path).unwrap().ino();
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&cfg_path)
                .unwrap();
            f.write_all(host).unwrap();
            drop(f);
            assert_eq!(std::fs::metadata(&cfg_path).unwrap().ino(), ino);
        } else {
            let tmp = cfg_path.with_file_name("config.json.host-tmp");
            std::fs::write(&tmp, host).unwrap();
            std::fs::rename(&tmp, &cfg_path).unwrap();
        }
        std::fs::remove_file(&marker).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{how}: {stderr}");
        let cfg = t.read_config();
        assert_eq!(
            cfg["host_key"],
            json!("written by the Host"),
            "{how}: the Host's write was lost: {cfg}"
        );
        assert_eq!(
            cfg[format!("{id}_command")],
            json!("/opt/tools/bin/tool"),
            "{how}: {cfg}"
        );
        assert!(stderr.contains("merging again"), "{how}: {stderr}");
        // No temp file of oyster's is left.
        let names: Vec<String> = std::fs::read_dir(cfg_path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(!names.iter().any(|n| n.contains("oyster-tmp")), "{names:?}");
    }
}
