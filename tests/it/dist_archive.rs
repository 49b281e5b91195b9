//! What is shipped as source: `make dist`'s archive of HEAD (its sha256, reproducible, complete,
//! resolving offline) and the shell scripts, shellcheck-clean.

use std::process::Command;

use crate::common::repo::{host_triple, need_git_checkout, repo, tool, VERSION};
use crate::common::{self, TestContext};

#[test]
#[ignore = "needs make and a git checkout: make dist archives HEAD (.ci/run runs it)"]
fn make_dist_archives_head_with_its_sha256_and_the_archive_resolves_offline() {
    need_git_checkout("make dist archives HEAD");
    common::needed_tool("make", "apt-get install make");
    let t = TestContext::new();
    let dist = t.path("dist");
    let dist_arg = format!("DISTDIR={}", dist.display());
    tool("make", &["-s", "dist", &dist_arg], repo());
    let name = format!("oyster-{VERSION}.tar.gz");
    let tar = dist.join(&name);

    // The .sha256 is the archive's, in the format `shasum -c` / `sha256sum -c` read.
    let sums = std::fs::read_to_string(dist.join(format!("{name}.sha256"))).unwrap();
    let (sum, file) = sums.trim_end().split_once("  ").unwrap();
    assert_eq!(file, name);
    assert!(sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()), "{sums}");
    let again = if common::runner_tool("sha256sum").is_some() {
        tool("sha256sum", &[&name], &dist)
    } else {
        tool("shasum", &["-a", "256", &name], &dist)
    };
    assert_eq!(again, sums);
    // Same commit, same bytes: a release's sha256 can be recomputed by anyone.
    let first = std::fs::read(&tar).unwrap();
    tool("make", &["-s", "dist", &dist_arg], repo());
    assert!(std::fs::read(&tar).unwrap() == first, "make dist is not reproducible");

    // Every file of HEAD, under oyster-<version>/, and nothing else.
    let prefix = format!("oyster-{VERSION}/");
    let mut listed: Vec<String> = tool("tar", &["-tzf", tar.to_str().unwrap()], &dist)
        .lines()
        .filter(|l| !l.ends_with('/'))
        .map(|l| {
            l.strip_prefix(&prefix).unwrap_or_else(|| panic!("{l} is outside {prefix}")).to_owned()
        })
        .collect();
    listed.sort();
    let mut tracked: Vec<String> = tool("git", &["ls-tree", "-r", "--name-only", "HEAD"], repo())
        .lines()
        .map(str::to_owned)
        .collect();
    tracked.sort();
    assert_eq!(listed, tracked);

    // Unpacked, it is a complete workspace whose lock file still holds: cargo resolves every
    // member and dependency offline with --locked (a manifest the lock file no longer satisfies
    // fails here). The resolve is filtered to the host platform: an unfiltered `cargo metadata`
    // wants the source of every locked crate, Apple-only ones included, which a fresh machine's
    // cargo cache does not have (only the crates this suite's own build downloaded). The full
    // build is opt-in: it doubles the suite's compile time on a small machine.
    tool("tar", &["-xzf", tar.to_str().unwrap()], t.dir.path());
    let src = t.path(&format!("oyster-{VERSION}"));
    let host = host_triple();
    let meta = tool(
        "cargo",
        &["metadata", "--offline", "--locked", "--filter-platform", &host, "--format-version", "1"],
        &src,
    );
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    let members: Vec<&str> =
        meta["workspace_members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(
        members.iter().any(|m| m.contains(&format!("oyster@{VERSION}"))
            || m.contains(&format!("oyster {VERSION}"))),
        "{members:?}"
    );
    // The same check refuses a manifest the lock file does not satisfy, so it is not a no-op.
    let manifest = src.join("Cargo.toml");
    let pristine = std::fs::read_to_string(&manifest).unwrap();
    let drifted = pristine.replacen("\n[dependencies]\n", "\n[dependencies]\nitoa = \"1\"\n", 1);
    assert_ne!(drifted, pristine, "the manifest has no [dependencies] table");
    std::fs::write(&manifest, drifted).unwrap();
    let refused = Command::new("cargo")
        .args(["metadata", "--offline", "--locked", "--filter-platform", &host])
        .args(["--format-version", "1"])
        .current_dir(&src)
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a drifted manifest resolved");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--locked"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    std::fs::write(&manifest, pristine).unwrap();
    if std::env::var_os("OYSTER_TEST_DIST_BUILD").is_some() {
        let target = t.path("target");
        common::output_ok(
            Command::new("cargo")
                .args(["build", "--offline", "--locked", "-p", "oyster"])
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(&src),
        );
        let v = tool(target.join("debug/oyster").to_str().unwrap(), &["--version"], &src);
        assert_eq!(v.trim(), format!("oyster {VERSION}"));
    } else {
        eprintln!("note: set OYSTER_TEST_DIST_BUILD=1 to also build the unpacked archive");
    }
}

#[test]
#[ignore = "needs shellcheck (.ci/run installs and runs it)"]
fn shipped_shell_is_shellcheck_clean() {
    let shellcheck = common::needed_tool("shellcheck", "apt-get install shellcheck");
    let version = Command::new(shellcheck).arg("--version").output().unwrap();
    assert!(version.status.success());
    for (file, shell) in [
        ("packaging/pkg/scripts/postinstall", "sh"),
        ("packaging/pkg/oyster-uninstall", "sh"),
        ("packaging/pkg/oyster-login", "sh"),
        ("scripts/release-formula.sh", "bash"),
        ("packaging/pkg/build-pkg.sh", "bash"),
        ("scripts/demo.sh", "bash"),
        ("scripts/apple-toolchain.sh", "bash"),
        ("scripts/check-macos.sh", "bash"),
        ("scripts/test-fresh.sh", "bash"),
        (".ci/run", "bash"),
    ] {
        let out =
            Command::new("shellcheck").args(["-s", shell]).arg(repo().join(file)).output().unwrap();
        assert!(out.status.success(), "{file}:\n{}", String::from_utf8_lossy(&out.stdout));
    }
}
