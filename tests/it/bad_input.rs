//! The rest of the bad-input catalogue (docs/bad-input.md): huge and non-UTF-8 configs, a full
//! disk, a read-only directory, a hanging launchctl. Each names the problem and loses nothing.

use std::path::Path;
use std::time::{Duration, Instant};
#[cfg(target_os = "linux")] // the tmpfs `Mount`
use std::{path::PathBuf, process::Command};

use crate::common::has_all;
use crate::common::{args, TestContext};

/// A tmpfs mounted for one test (root only); unmounted on drop. Linux only: macOS has no
/// tmpfs (`mount -t tmpfs`, `size=`, `remount,ro`); its RAM disks are `hdiutil` images.
#[cfg(target_os = "linux")]
struct Mount(PathBuf);

#[cfg(target_os = "linux")]
impl Mount {
    fn tmpfs(dir: &Path, opts: &str) -> Mount {
        crate::common::need_root();
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(dir)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "cannot mount a tmpfs here (needs root and mount permission)");
        Mount(dir.to_owned())
    }
    fn remount(&self, opts: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&self.0)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
}

#[cfg(target_os = "linux")]
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_large_config_is_handled_and_one_over_the_cap_is_refused_untouched() {
    let t = TestContext::new();
    let blob: String = "x".repeat(1 << 20);
    let config_with = |n: usize| {
        let mut text = String::from("{");
        for i in 0..n {
            text += &format!("\"k{i}\": \"{blob}\", ");
        }
        text + "\"claude_command\": \"claude\"}"
    };
    t.write_config(&config_with(12));
    t.fake_exe(&t.home.join("bin/claude"));
    t.run(["config", "sync"]).ok();
    let v = t.read_config();
    assert_eq!(v["k11"].as_str().unwrap().len(), 1 << 20);
    assert!(v["claude_command"].as_str().unwrap().ends_with("/bin/claude"));
    // Over the 16 MiB cap (docs/behaviour.md §9): refused as input, nothing read into memory whole.
    t.write_config(&config_with(20));
    let before = std::fs::read(t.config_path()).unwrap();
    t.run(["config", "sync"]).fails_with(2).stderr_has_all(&["config.json", "larger than"]);
    assert_eq!(std::fs::read(t.config_path()).unwrap(), before);
}

#[test]
fn a_non_utf8_config_is_refused_with_its_position() {
    let t = TestContext::new();
    std::fs::create_dir_all(t.config_path().parent().unwrap()).unwrap();
    let bytes = b"{\n  \"name\": \"caf\xe9\"\n}".to_vec();
    std::fs::write(t.config_path(), &bytes).unwrap();
    t.run(["config", "sync"]).fails_with(2).stderr_has_all(&["config.json", "line 2"]);
    assert_eq!(std::fs::read(t.config_path()).unwrap(), bytes);
}

#[cfg(target_os = "linux")] // a tmpfs (see `Mount`)
#[test]
#[ignore = "needs root: mounts a tmpfs (.ci/run runs it)"]
fn a_full_disk_fails_the_write_and_keeps_the_old_file() {
    let t = TestContext::new();
    let dir = t.home.join(".oysterun");
    let _m = Mount::tmpfs(&dir, "size=64k");
    let original = format!("{{\"pad\": \"{}\", \"claude_command\": \"/old\"}}", "p".repeat(20_000));
    std::fs::write(dir.join("config.json"), &original).unwrap();
    // Fill the rest of the disk.
    let _ = std::fs::write(dir.join("filler"), vec![0u8; 64 * 1024]);
    let e = t.run(["providers", "set", "claude", "/new/claude"]).fails_with(1).stderr();
    assert!(
        e.contains("config.json") && (e.contains("No space left") || e.contains("space")),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("config.json")).unwrap(), original);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.contains("oyster-tmp")), "{names:?}");
}

#[cfg(target_os = "linux")] // a tmpfs (see `Mount`)
#[test]
#[ignore = "needs root: mounts a tmpfs (.ci/run runs it)"]
fn a_read_only_config_dir_is_an_error_that_changes_nothing() {
    let t = TestContext::new();
    let dir = t.home.join(".oysterun");
    let m = Mount::tmpfs(&dir, "size=1m");
    std::fs::write(dir.join("config.json"), "{\"claude_command\": \"/old\"}").unwrap();
    std::fs::write(dir.join("config.json.lock"), "").unwrap();
    m.remount("ro");
    t.run(["providers", "set", "claude", "/new/claude"])
        .fails_with(1)
        .stderr_has_all(&["Read-only file system", ".oysterun"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("config.json")).unwrap(),
        "{\"claude_command\": \"/old\"}"
    );
    // Read-only commands still work.
    t.run(["providers", "status", "--json"]).ok();
}

/// `agent install` of the fixture Host on a free port, which must fail (exit 1): its stderr.
fn failed_install(t: &TestContext) -> String {
    let root = t.fixture_root("root");
    let install = args(&["agent", "install"]).host(&root).port(crate::common::free_port());
    t.run(install).fails_with(1).stderr()
}

/// Points oyster at a launchctl that is this shell script.
fn fake_launchctl(t: &mut TestContext, script: &str) {
    t.stand_in("OYSTER_LAUNCHCTL", "launchctl", script);
}

#[test]
fn a_hanging_launchctl_is_killed_and_named() {
    let mut t = TestContext::new();
    fake_launchctl(&mut t, "#!/bin/sh\nexec /bin/sleep 60\n");
    t.extra_env.push(("OYSTER_LAUNCHCTL_TIMEOUT_SECS".into(), "1".into()));
    let t0 = Instant::now();
    let e = failed_install(&t);
    assert!(t0.elapsed() < Duration::from_secs(10), "bounded: {:?}", t0.elapsed());
    has_all(&e, &["did not finish within 1 s", "launchctl"]);
    assert!(e.contains("OYSTER_LAUNCHCTL_TIMEOUT_SECS"), "the knob is said: {e}");
    assert!(t.own_processes().is_empty(), "the hung launchctl was killed");
}

/// Regression: any failing `print gui/<uid>` (here a launchctl that exits 127) was read as "no
/// GUI session" and oyster silently moved to user/<uid>. Only 112 and 125 mean that.
#[test]
fn a_broken_launchctl_is_not_mistaken_for_a_missing_gui_session() {
    let mut t = TestContext::new();
    fake_launchctl(&mut t, "#!/bin/sh\necho 'launchctl: broken' >&2\nexit 127\n");
    let e = failed_install(&t);
    has_all(&e, &["exited with 127", "launchctl: broken"]);
    assert!(!e.contains("using user/"), "no silent domain fallback: {e}");
}

/// Issue 12 item 9: when launchctl itself fails, `doctor --json` and `agent status --json`
/// still print their whole document (config, node and provider facts included), with the
/// launchctl failure as one failed check / note — exactly when doctor is needed.
#[test]
fn a_failing_launchctl_still_gets_the_whole_doctor_and_status_documents() {
    let mut t = TestContext::new();
    fake_launchctl(&mut t, "#!/bin/sh\necho 'launchctl: broken' >&2\nexit 127\n");
    t.pin_host_env();
    let d = t.run(["doctor", "--json"]).fails_with(1).json();
    let checks = d["checks"].as_array().unwrap();
    let named = |n: &str| checks.iter().find(|c| c["check"] == n).cloned();
    assert_eq!(named("config").unwrap()["status"], "ok", "{d}");
    assert_eq!(named("node").unwrap()["status"], "ok", "{d}");
    let launchd = named("launchd").unwrap();
    assert_eq!(launchd["status"], "fail", "{d}");
    assert!(launchd["detail"].as_str().unwrap().contains("launchctl: broken"), "{d}");
    assert!(d["providers"].as_array().is_some_and(|p| !p.is_empty()));
    let st = t.run(["agent", "status", "--json"]).fails_with(1).json();
    assert_eq!(st["summary"], "unknown", "{st}");
    assert!(st["notes"].to_string().contains("launchctl failed"), "{st}");
}

/// Every test docs/bad-input.md names exists, so the catalogue cannot drift from the suite.
#[test]
fn the_bad_input_catalogue_names_only_real_tests() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(top.join("docs/bad-input.md")).unwrap();
    let mut named = 0;
    for cell in doc.split('`').skip(1).step_by(2) {
        let (Some((module, _)), Some((_, func))) = (cell.split_once("::"), cell.rsplit_once("::"))
        else {
            continue;
        };
        if func == "*"
            || module == "file"
            || !module.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        {
            continue;
        }
        // A module of the integration suite, or a `src/` module at any depth (`x.rs` or
        // `x/mod.rs`); several files may share a name, so any of them may hold the test.
        let texts: Vec<String> = std::iter::once(top.join(format!("tests/it/{module}.rs")))
            .chain(crate::common::rust_files(&top.join("src")).into_iter().filter(|p| {
                let dir = p.parent().and_then(Path::file_name);
                // The module's file, its `module_tests.rs`, or any file of its
                // directory (its tests may live in `module/tests.rs`).
                p.file_stem()
                    .is_some_and(|s| s == module || *s == *format!("{module}_tests").as_str())
                    || dir.is_some_and(|d| d == module)
                    || p.ancestors().any(|a| a.file_name().is_some_and(|n| n == module))
            }))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect();
        assert!(!texts.is_empty(), "docs/bad-input.md names module {module}, which has no file");
        assert!(
            texts.iter().any(|t| t.contains(&format!("fn {func}("))),
            "docs/bad-input.md names {cell}, which does not exist"
        );
        named += 1;
    }
    assert!(named > 30, "the catalogue names its tests ({named} found)");
}

#[test]
fn providers_set_refuses_a_command_whose_directory_cannot_go_on_path() {
    let t = TestContext::new();
    t.write_config("{\"keep\": 1}");
    let before = std::fs::read(t.config_path()).unwrap();
    for bad in [
        "/opt/a:b/claude",
        "/opt/tab\there/claude",
        "/opt/esc\x1b[31m/claude",
        "/opt/bell\x07/claude",
    ] {
        let e = t.run(["providers", "set", "claude", bad]).fails_with(2).stderr();
        assert!(e.contains("COMMAND") && e.contains("hint:"), "{bad:?}: {e}");
        assert!(!e.contains('\x1b'), "escaped in the message: {e:?}");
        assert_eq!(std::fs::read(t.config_path()).unwrap(), before, "{bad:?}");
    }
}
