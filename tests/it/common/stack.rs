//! The arguments of a command and the stack most tests drive: the fixture Host under the
//! simulator, and what a test reads of it (its plist, status, logs, launchd's view).

use std::path::{Path, PathBuf};

use super::{free_port, real_node, Run, TestContext};

/// The arguments of one oyster command, built by flags: `args(&["agent", "install"])
/// .stack("lc").root(&root).node(&node).port(p).wait(10, 300)`. One builder for every test
/// that drives a stack, so a renamed flag is changed in one place.
#[derive(Debug, Clone, Default)]
pub struct Args(pub Vec<String>);

pub fn args(words: &[&str]) -> Args {
    Args(words.iter().map(|w| (*w).to_owned()).collect())
}

impl Args {
    pub fn arg(mut self, a: impl Into<String>) -> Args {
        self.0.push(a.into());
        self
    }
    pub fn extra(mut self, more: &[&str]) -> Args {
        self.0.extend(more.iter().map(|a| (*a).to_owned()));
        self
    }
    pub fn stack(self, name: &str) -> Args {
        self.arg("--stack").arg(name)
    }
    pub fn root(self, root: impl AsRef<Path>) -> Args {
        self.arg("--root").arg(root.as_ref().to_str().unwrap())
    }
    pub fn node(self, node: impl AsRef<Path>) -> Args {
        self.arg("--node-bin").arg(node.as_ref().to_str().unwrap())
    }
    /// `--root ROOT --node-bin NODE`, NODE the machine's real node: the Host a test drives.
    pub fn host(self, root: impl AsRef<Path>) -> Args {
        self.root(root).node(real_node())
    }
    /// `--port P`: a number, or the text a test holds it as (`"0"`, `"80000"` for misuse).
    pub fn port(self, port: impl ToString) -> Args {
        self.arg("--port").arg(port.to_string())
    }
    /// `--wait SECS`: how long verification waits (the settle as oyster's default).
    pub fn wait_secs(self, secs: u64) -> Args {
        self.arg("--wait").arg(secs.to_string())
    }
    /// `--wait SECS --settle-ms MS`: how long verification waits and how long it must hold.
    pub fn wait(self, secs: u64, settle_ms: u64) -> Args {
        self.arg("--wait").arg(secs.to_string()).arg("--settle-ms").arg(settle_ms.to_string())
    }
}

/// `install STACK --port P --root ROOT`: how the tests install a stack.
pub fn install_args(stack: &str, port: u16, root: &Path) -> Args {
    args(&["install", stack]).port(port).root(root)
}

impl Args {
    /// `--settle-ms MS`: how long the verified Host must keep answering.
    pub fn settle(self, ms: u64) -> Args {
        self.arg("--settle-ms").arg(ms.to_string())
    }
}

impl From<Args> for Vec<String> {
    fn from(a: Args) -> Vec<String> {
        a.0
    }
}

impl IntoIterator for Args {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A stack of the fixture Host under the simulator: its own HOME, the fixture root `root`, a
/// free port, the machine's node.
pub struct Stack {
    pub t: TestContext,
    pub root: PathBuf,
    pub name: &'static str,
    pub port: u16,
}

impl Stack {
    pub fn new(name: &'static str) -> Stack {
        let mut t = TestContext::new();
        t.use_sim();
        let root = t.fixture_root("root");
        Stack { t, root, name, port: free_port() }
    }

    /// [`Stack::new`], installed and verified (`agent install … --wait 10 --settle-ms 300`).
    pub fn installed(name: &'static str) -> Stack {
        let s = Stack::new(name);
        s.t.run(s.args("install")).ok();
        s
    }

    /// [`Stack::installed`], then stopped (`agent stop`): disabled, booted out.
    pub fn stopped(name: &'static str) -> Stack {
        let s = Stack::installed(name);
        s.t.run(["agent", "stop", "--stack", name]).ok();
        s
    }

    /// Makes the installed Host crash: it now exits on start, is killed, and launchd waits
    /// out its throttle (`spawn scheduled`): a loaded job that does not run.
    pub fn crash_looping(&self) {
        crate::common::TestContext::fixture_flag(&self.root, "crash-on-start", "");
        self.t.run(["kill", "--stack", self.name]).ok();
        crate::common::wait_until(
            std::time::Duration::from_secs(5),
            "the job waiting out its throttle",
            || self.status()["state"] == "spawn scheduled",
        );
    }

    /// [`Stack::new`] with the root and the machine's Node pinned in the environment
    /// (`OYSTERUN_ROOT`, `OYSTERUN_NODE_BIN`): its commands need no --root/--node-bin.
    pub fn pinned(name: &'static str) -> Stack {
        let mut t = TestContext::new();
        t.use_sim();
        let root = t.pin_host_env();
        Stack { t, root, name, port: free_port() }
    }

    /// `agent VERB --stack NAME --root ROOT --node-bin NODE --port P --wait 10 --settle-ms 300`.
    pub fn args(&self, verb: &str) -> Vec<String> {
        self.host_args(&["agent", verb]).wait(10, 300).into()
    }

    /// `WORDS --stack NAME --root ROOT --node-bin NODE --port P`.
    pub fn host_args(&self, words: &[&str]) -> Args {
        args(words).stack(self.name).host(&self.root).port(self.port)
    }

    pub fn status(&self) -> serde_json::Value {
        self.t.run(["agent", "status", "--json", "--stack", self.name]).json()
    }

    pub fn plist(&self) -> PathBuf {
        self.t.home.join(format!("Library/LaunchAgents/com.oysterun.host.{}.plist", self.name))
    }
}

impl Stack {
    /// `agent VERB --stack NAME`, then the Host's definition (`--root --node-bin --port`) when
    /// `definition`, then `--wait SECS --settle-ms MS` when `wait` is given: each file's
    /// lifecycle tests name which verbs take which.
    pub fn agent_args(&self, verb: &str, definition: bool, wait: Option<(u64, u64)>) -> Args {
        let mut a = args(&["agent", verb]).stack(self.name);
        if definition {
            a = a.host(&self.root).port(self.port);
        }
        if let Some((secs, settle_ms)) = wait {
            a = a.wait(secs, settle_ms);
        }
        a
    }

    /// Runs `args` with one more environment variable (`LAUNCHD_SIM_…`, a fault) for this run.
    pub fn run_with_env(&self, (k, v): (&str, &str), args: impl Into<Vec<String>>) -> Run {
        Run(self.t.cmd().env(k, v).args(args.into()).output().unwrap())
    }

    /// The job's label, `com.oysterun.host.NAME`.
    pub fn label(&self) -> String {
        format!("com.oysterun.host.{}", self.name)
    }

    /// `~/.oysterun-stacks/NAME`.
    pub fn stack_dir(&self) -> PathBuf {
        self.t.stack_dir(self.name)
    }

    /// The lines of the stack's service-control audit log, parsed.
    pub fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.stack_dir().join("logs/service-control.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// `KIND/<uid>` (`gui`, `user`): a launchd domain of this user.
    pub fn domain(&self, kind: &str) -> String {
        format!("{kind}/{}", nix::unistd::getuid())
    }

    /// `KIND/<uid>/LABEL`: the job in a launchd domain of this user.
    pub fn target(&self, kind: &str) -> String {
        format!("{}/{}", self.domain(kind), self.label())
    }

    /// Whether the simulator has the job loaded in the domain `KIND/<uid>`.
    pub fn loaded_in(&self, kind: &str) -> bool {
        self.t.sim(&["print", &self.target(kind)]).code() == 0
    }

    /// The pid the simulator's `gui/<uid>` job runs, if any.
    pub fn launchd_pid(&self) -> Option<u32> {
        let out = self.t.sim(&["print", &self.target("gui")]).stdout();
        out.lines().find_map(|l| l.trim().strip_prefix("pid = ")).and_then(|p| p.parse().ok())
    }

    /// `~/.oysterun-stacks/NAME/run`: the Host's identity files and oyster's exec record.
    pub fn run_dir(&self) -> PathBuf {
        self.stack_dir().join("run")
    }

    /// The Host log as it is now (empty when there is none yet).
    pub fn host_log(&self) -> String {
        std::fs::read_to_string(self.stack_dir().join("logs/oysterun-host.log")).unwrap_or_default()
    }

    /// Whether the simulator's domain `KIND/<uid>` has the label disabled.
    pub fn disabled_in(&self, kind: &str) -> bool {
        self.t
            .sim(&["print-disabled", &self.domain(kind)])
            .stdout()
            .contains(&format!("\"{}\" => disabled", self.label()))
    }

    /// Uninstalls the stack (whatever its state) and waits until none of its processes runs.
    pub fn done(&self) {
        let _ = self.t.run(["agent", "uninstall", "--stack", self.name]);
        self.t.wait_no_processes();
    }
}
