//! The macOS workflow's real-launchd steps, run here word for word (issue 39 item 1): each
//! step's `run:` script under `bash --noprofile --norc -eo pipefail` (what GitHub's `shell:
//! bash` is), in order, with the runner's variables set (`RUNNER_TEMP`, `GITHUB_ENV`, …, and
//! what earlier steps wrote to `GITHUB_ENV`), a temp HOME, `launchctl` on PATH being the
//! launchd simulator (oyster itself is pointed at it by `OYSTER_LAUNCHCTL`), the leg's Node in
//! a tool cache as actions/setup-node leaves it, and the repository's Node Host fixture as the
//! Oysterun root. A renamed field, a new exit code or a pipe that fails under `pipefail` fails
//! here before a Mac ever runs it. Steps that cannot run here are named in [`SKIPPED`], each
//! with its reason; every other step of the job must run.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::has_all;
use crate::common::{real_node, sim_bin, TestContext, BIN};

/// Steps not run here, by name (a prefix of it), and why. Each must name a step of the job.
const SKIPPED: &[(&str, &str)] = &[
    ("Rust", "installs the toolchain with rustup; this test runs under the one that built it"),
    (
        "Build oyster",
        "`cargo build -p oyster` builds the binary `cargo test` built for this test",
    ),
    (
        "oyster drives the real /bin/launchctl",
        "asserts that no OYSTER_LAUNCHCTL is set and /bin/launchctl was used; here the simulator stands in through OYSTER_LAUNCHCTL",
    ),
    (
        "The .pkg installs",
        "needs macOS's pkgbuild, productbuild, installer, pkgutil and lipo (tests/it/pkg_*.rs run the scripts against fakes)",
    ),
    ("Test suite (launchd simulator)", "`make test` is what runs this test"),
    (
        "Simulator conformance against the real /bin/launchctl",
        "needs the real /bin/launchctl",
    ),
    (
        "Conformance result in the summary",
        "reports the outcome of the conformance step, which does not run here",
    ),
];

/// One step of a job: its name (or the action it uses), `if:`, `env:` and `run:` script.
#[derive(Debug, Default)]
struct Step {
    name: String,
    uses: bool,
    cond: Option<String>,
    env: Vec<(String, String)>,
    run: Option<String>,
}

/// The steps of job `job`, read as GitHub reads them for what this test needs: `- name:` or
/// `- uses:` starts a step (6 spaces in), its keys are 8 in, a `run: |` block is every line
/// after it indented by 10 or more (or empty), with those 10 spaces taken off.
fn steps(text: &str, job: &str) -> Vec<Step> {
    let head = format!("  {job}:");
    let mut lines = text.lines().skip_while(|l| *l != head).skip(1).peekable();
    let mut out: Vec<Step> = vec![];
    let indent = |l: &str| l.len() - l.trim_start().len();
    while let Some(line) = lines.next() {
        if !line.is_empty() && indent(line) <= 2 && !line.trim_start().starts_with('#') {
            break; // the next job
        }
        if let Some(name) = line.strip_prefix("      - name: ") {
            out.push(Step { name: name.to_owned(), ..Step::default() });
            continue;
        }
        if let Some(action) = line.strip_prefix("      - uses: ") {
            out.push(Step { name: action.to_owned(), uses: true, ..Step::default() });
            continue;
        }
        let Some(step) = out.last_mut() else { continue };
        if let Some(cond) = line.strip_prefix("        if: ") {
            step.cond = Some(cond.to_owned());
        } else if line == "        env:" {
            while let Some(l) = lines.peek() {
                if indent(l) < 10 || l.trim().is_empty() {
                    break;
                }
                let (k, v) = l.trim().split_once(": ").unwrap();
                step.env.push((k.to_owned(), v.to_owned()));
                lines.next();
            }
        } else if line == "        run: |" {
            let mut script = String::new();
            while let Some(l) = lines.peek() {
                if !l.trim().is_empty() && indent(l) < 10 {
                    break;
                }
                script.push_str(l.get(10..).unwrap_or(""));
                script.push('\n');
                lines.next();
            }
            step.run = Some(script);
        } else if let Some(cmd) = line.strip_prefix("        run: ") {
            step.run = Some(format!("{cmd}\n"));
        } else if let Some(uses) = line.strip_prefix("        uses: ") {
            step.uses = true;
            step.name = format!("{} ({uses})", step.name);
        }
    }
    out
}

fn workflow() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows/macos.yml"),
    )
    .unwrap()
}

/// Whether a step's `if:` holds on the `official` leg of a run whose steps all passed.
fn runs_on_a_passing_official_leg(cond: Option<&str>) -> bool {
    let Some(cond) = cond else { return true };
    match cond {
        "matrix.node == 'official'" => true,
        "matrix.node == 'homebrew'" => false,
        c if c.contains("failure()") => false,
        "${{ !cancelled() }}" | "always()" => true,
        c if c.starts_with("${{ !cancelled() &&") => true,
        other => panic!("this test does not know the condition `if: {other}`: teach it"),
    }
}

/// The runner: its directories and the environment every step starts from.
struct Runner {
    t: TestContext,
    workspace: PathBuf,
    temp: PathBuf,
    env: BTreeMap<String, String>,
    path: Vec<PathBuf>,
}

impl Runner {
    fn new() -> Runner {
        let t = TestContext::new();
        // The checkout: what the steps read of the repository, and the built binary where
        // `cargo build` leaves it.
        let workspace = t.path("work/oyster");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::create_dir_all(workspace.join("target/debug")).unwrap();
        std::fs::create_dir_all(workspace.join("tests")).unwrap();
        symlink(BIN, workspace.join("target/debug/oyster")).unwrap();
        symlink(repo.join("tests/fixtures"), workspace.join("tests/fixtures")).unwrap();
        // `launchctl` on PATH is the simulator.
        let bin = t.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        symlink(sim_bin(), bin.join("launchctl")).unwrap();
        // actions/setup-node's layout: the tool cache holds node/<version>/<arch>/bin/node.
        let tool_cache = t.path("hostedtoolcache");
        let node_bin = tool_cache.join("node/22.0.0/x64/bin");
        std::fs::create_dir_all(&node_bin).unwrap();
        symlink(real_node(), node_bin.join("node")).unwrap();
        let temp = t.path("runner-temp");
        std::fs::create_dir_all(&temp).unwrap();
        let mut env = BTreeMap::new();
        let mut set = |k: &str, v: &Path| env.insert(k.to_owned(), v.display().to_string());
        set("HOME", &t.home);
        set("RUNNER_TEMP", &temp);
        set("RUNNER_TOOL_CACHE", &tool_cache);
        set("GITHUB_WORKSPACE", &workspace);
        set("GITHUB_ENV", &temp.join("github-env"));
        set("GITHUB_PATH", &temp.join("github-path"));
        set("GITHUB_STEP_SUMMARY", &temp.join("step-summary.md"));
        set("GITHUB_OUTPUT", &temp.join("github-output"));
        set("OYSTER_LAUNCHCTL", &sim_bin());
        set("LAUNCHD_SIM_STATE", &t.path("launchd-state"));
        for (k, v) in [
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_RUN_ID", "4242"),
            ("GITHUB_RUN_ATTEMPT", "1"),
            ("LAUNCHD_SIM_DRAIN_MS", "200"),
            // The job's own env, for this leg (matrix.node, matrix.os).
            ("NODE_FLAVOUR", "official"),
            ("RUNNER_IMAGE", "linux-launchd-simulator"),
            ("HOMEBREW_NO_AUTO_UPDATE", "1"),
            ("HOMEBREW_NO_INSTALL_CLEANUP", "1"),
        ] {
            env.insert(k.to_owned(), v.to_owned());
        }
        let mut path = vec![bin, node_bin];
        path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        Runner { t, workspace, temp, env, path }
    }

    /// Runs one step's script as GitHub does; `Err` with everything it printed when it fails.
    fn run(&mut self, step: &Step, script: &str) -> Result<String, String> {
        let file = self.temp.join("step.sh");
        std::fs::write(&file, script).unwrap();
        let mut c = Command::new("bash");
        c.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&file)
            .current_dir(&self.workspace)
            .env_clear()
            .envs(&self.env)
            .env("PATH", std::env::join_paths(&self.path).unwrap());
        for (k, v) in &step.env {
            c.env(k, v);
        }
        let t0 = std::time::Instant::now();
        let out = c.output().unwrap();
        let said = format!(
            "--- stdout\n{}--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("step {:?}: exit {:?} in {:?}", step.name, out.status.code(), t0.elapsed());
        // What the step left for the next ones, as the runner carries it over.
        for line in
            std::fs::read_to_string(self.temp.join("github-env")).unwrap_or_default().lines()
        {
            if let Some((k, v)) = line.split_once('=') {
                self.env.insert(k.to_owned(), v.to_owned());
            }
        }
        for line in
            std::fs::read_to_string(self.temp.join("github-path")).unwrap_or_default().lines().rev()
        {
            let dir = PathBuf::from(line);
            if !self.path.contains(&dir) {
                self.path.insert(0, dir);
            }
        }
        if out.status.success() {
            Ok(said)
        } else {
            Err(said)
        }
    }
}

impl Drop for Runner {
    /// Whatever a failed step left: the test stack uninstalled, its processes waited for.
    fn drop(&mut self) {
        if let Some(stack) = self.env.get("STACK") {
            let _ = Command::new(BIN)
                .args(["agent", "uninstall", "--stack", stack])
                .env_clear()
                .envs(&self.env)
                .output();
        }
        // Bounded, and never a panic inside a panic: a test that failed says why itself.
        let t0 = std::time::Instant::now();
        while !self.t.own_processes().is_empty() && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
#[ignore = "needs jq and curl, which the workflow's scripts use (.ci/run installs and runs it)"]
fn every_real_launchd_step_of_the_macos_workflow_runs_here_against_the_simulator() {
    crate::common::needed_tool("jq", "apt-get install jq");
    crate::common::needed_tool("curl", "apt-get install curl");
    let text = workflow();
    let steps = steps(&text, "macos");
    for (name, _) in SKIPPED {
        let n = steps.iter().filter(|s| s.name.starts_with(name)).count();
        assert_eq!(n, 1, "the skip list names {name:?}, which matches {n} steps");
    }
    let mut runner = Runner::new();
    let mut ran = vec![];
    for step in &steps {
        if step.uses || !runs_on_a_passing_official_leg(step.cond.as_deref()) {
            continue;
        }
        if SKIPPED.iter().any(|(n, _)| step.name.starts_with(n)) {
            continue;
        }
        let script = step
            .run
            .as_deref()
            .unwrap_or_else(|| panic!("step {:?} has neither uses: nor run:", step.name));
        assert!(
            !script.contains("${{"),
            "step {:?}: an expression in a script cannot run here; pass it through env:",
            step.name
        );
        if let Err(said) = runner.run(step, script) {
            let summary = std::fs::read_to_string(runner.temp.join("step-summary.md"));
            panic!(
                "the macOS workflow's step {:?} fails against the simulator:\n{said}\nsummary so far: {summary:?}",
                step.name
            );
        }
        ran.push(step.name.clone());
    }
    // The real-launchd steps, in their order, all ran.
    for name in [
        "The Node under test is the one this leg asked for",
        "A test stack on a free port",
        "Login Items of a plist never loaded",
        "agent install, verified through the real launchd",
        "What the real launchd prints for the test job",
        "env_proof says which proof verified the Host",
        "agent restart starts a new Host",
        "a verified restart of a Host younger than 10 s",
        "stop keeps it stopped",
        "a restart onto a held port is refused",
        "What the real launchd prints after the restart",
        "agent regenerate after a provider appears; doctor",
        "agent uninstall leaves nothing loaded or listening",
    ] {
        assert!(ran.iter().any(|r| r.starts_with(name)), "{name:?} did not run: {ran:#?}");
    }
    // What the artifact steps recorded, as the Mac's artifact would have it.
    let evidence = runner.temp.join("launchd-evidence");
    let login_items = std::fs::read_to_string(evidence.join("login-items.txt")).unwrap();
    for state in ["never loaded: login_item=", "loaded: login_item=enabled", "stopped: login_item="]
    {
        has_all(&login_items, &[state]);
    }
    let rc = |name: &str| std::fs::read_to_string(evidence.join(format!("{name}.rc"))).unwrap();
    assert_eq!(rc("print-job-after-install").trim(), "0");
    assert_eq!(rc("print-user-domain-of-gui-job").trim(), "113");
    assert_eq!(rc("bootout-not-loaded").trim(), "3");
}

/// The reader above, on the shapes it meets: a block script keeps its own indentation and
/// blank lines, a one-line `run:` is a script too, `env:` and `if:` are read, and a `uses:`
/// step is marked.
#[test]
fn the_workflow_reader_keeps_scripts_word_for_word() {
    let text = "jobs:\n  macos:\n    steps:\n      - uses: actions/checkout@v4\n\n      - name: One\n        if: matrix.node == 'official'\n        env:\n          OUTCOME: x\n        run: |\n          set -euo pipefail\n          if true; then\n            echo \"a  b\"\n          fi\n\n          echo done\n\n      # a comment\n      - name: Two\n        run: make test\n  other:\n    steps:\n      - name: Three\n        run: no\n";
    let s = steps(text, "macos");
    assert_eq!(s.len(), 3, "{s:#?}");
    assert!(s[0].uses);
    assert_eq!(s[1].cond.as_deref(), Some("matrix.node == 'official'"));
    assert_eq!(s[1].env, [("OUTCOME".to_owned(), "x".to_owned())]);
    assert_eq!(
        s[1].run.as_deref(),
        Some("set -euo pipefail\nif true; then\n  echo \"a  b\"\nfi\n\necho done\n\n")
    );
    assert_eq!(s[2].run.as_deref(), Some("make test\n"));
}
