//! The macOS workflow (`.github/workflows/macos.yml`) as its steps stand: what it must prove is
//! checked in its text (issue 29 item 1); its real-launchd steps also run here, word for word,
//! against the simulator (`ci_macos_steps.rs`, issue 39 item 1). The real-launchd steps come
//! before the simulator suite, which runs whatever they gave, so a real-launchd failure is
//! reported by its own step and never hidden behind `make test`; the restart inside launchd's
//! throttle interval is required to verify in under 3 s; Homebrew's Node must be proven
//! `live`; the `.pkg` is installed and removed; and a Linux job type-checks the tests for
//! both Apple targets.

use crate::common::has_all;
use std::path::Path;

/// The workflow's steps, in order: `(name, body)` for each `- name:` / `- uses:` item of the
/// job `job` (the lines up to the next step, comments dropped).
fn steps(text: &str, job: &str) -> Vec<(String, String)> {
    let head = format!("  {job}:");
    assert!(text.lines().any(|l| l == head), "no job {job}");
    // The job's lines: after its head, up to the next line indented by two (the next job).
    let lines =
        text.lines().skip_while(|l| *l != head).skip(1).take_while(|l| {
            l.is_empty() || l.starts_with("   ") || l.trim_start().starts_with('#')
        });
    let mut out: Vec<(String, String)> = vec![];
    for line in lines {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let item =
            line.strip_prefix("      - name: ").or_else(|| line.strip_prefix("      - uses: "));
        if let Some(item) = item {
            out.push((item.to_owned(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

fn workflow() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows/macos.yml");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_macos_workflow_reports_real_launchd_before_the_simulator_suite() {
    let text = workflow();
    let steps = steps(&text, "macos");
    let index = |name: &str| {
        steps
            .iter()
            .position(|(n, _)| n.starts_with(name))
            .unwrap_or_else(|| panic!("no step {name:?} in {steps:#?}"))
    };
    let suite = steps
        .iter()
        .position(|(_, body)| body.contains("run: make test"))
        .expect("a step runs make test");
    for real in [
        "agent install, verified through the real launchd",
        "env_proof says which proof verified the Host",
        "a verified restart of a Host younger than 10 s",
        "stop keeps it stopped",
        "agent uninstall leaves nothing loaded or listening",
        "The .pkg installs",
    ] {
        assert!(index(real) < suite, "{real:?} must run before the simulator suite");
    }
    // The suite runs whatever the real steps gave (and so does the conformance run).
    assert!(steps[suite].1.contains("if: ${{ !cancelled() }}"), "{:?}", steps[suite]);
    let conformance = index("Simulator conformance");
    assert!(conformance > suite);
    assert!(steps[conformance].1.contains("!cancelled()"));

    // The restart inside the throttle interval: a Host younger than 10 s, verified in < 4.5 s
    // (3 s and the 1.5 s settle; waiting out the throttle takes 8 s or more).
    let quick = &steps[index("a verified restart of a Host younger than 10 s")].1;
    for needle in ["< 10", "< 4.5", ".running and .verified", "homebrew", "live"] {
        assert!(quick.contains(needle), "{needle:?} in {quick}");
    }
    // Homebrew's Node is proven live at install and after a restart: never `exec`/`launchd`.
    for step in ["env_proof says which proof verified the Host", "agent restart starts a new Host"]
    {
        let body = &steps[index(step)].1;
        assert!(body.contains("homebrew:live"), "{step}: {body}");
        assert!(
            !body.contains("homebrew:exec") && !body.contains("homebrew:launchd"),
            "{step}: {body}"
        );
    }
    // The .pkg is installed and uninstalled, and no step of it may fail quietly.
    let pkg = &steps[index("The .pkg installs")].1;
    // No terminal on a runner: oyster-uninstall removes nothing without --yes (exit 1).
    has_all(pkg, &["sudo installer -pkg", "sudo /usr/local/bin/oyster-uninstall --yes"]);
    for (name, body) in &steps {
        if body.contains("continue-on-error: true") {
            assert!(
                name.starts_with("Simulator conformance"),
                "only the conformance run may fail without failing the job: {name}"
            );
        }
    }
}

#[test]
fn a_linux_job_type_checks_the_tests_for_both_apple_targets() {
    let text = workflow();
    let steps = steps(&text, "apple-targets-on-linux");
    let all: String = steps.iter().map(|(n, b)| format!("{n}\n{b}")).collect();
    has_all(&all, &["rustup target add aarch64-apple-darwin x86_64-apple-darwin"]);
    has_all(&all, &["make check-macos"]);
    assert!(text.contains("runs-on: ubuntu-latest"));
    // make check-macos checks every target kind, tests included: each `cargo clippy` it runs
    // (a command joined across its `\` continuations) has `--all-targets`.
    let script = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-macos.sh"),
    )
    .unwrap();
    let joined = script.replace("\\\n", " ");
    let runs: Vec<&str> = joined
        .lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with('#') && !l.starts_with("say "))
        .filter(|l| l.contains("cargo clippy"))
        .collect();
    assert!(runs.len() >= 2, "both ways of the check: {runs:?}");
    for run in runs {
        has_all(run, &["--all-targets"]);
    }
}
