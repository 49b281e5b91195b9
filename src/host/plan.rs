//! The Host plan: everything one start of the Host needs, computed once and shared by the
//! LaunchAgent, direct startup and setup — the merged config, the pinned Node, the root, the
//! port, the generated environment and the plist bytes.

use std::path::{Path, PathBuf};

use crate::config::{self, Change, ConfigDoc};
use crate::error::Invalid;
use crate::host::launchenv::{self, EnvInputs, LaunchEnv};
use crate::host::node::{self, NodePin, PinRequest};
use crate::host::plist::{self as agentplist, AgentSpec, Installed};
use crate::host::root::RootSearch;
use crate::host::stack::Stack;
use crate::provider::registry::PROVIDERS;
use crate::provider::resolve::Intent;
use crate::provider::resolve::Search;

/// Everything outside the stack's files that planning reads, given explicitly (the command
/// layer's context converts into it: `impl From<&Context> for PlanEnv`).
#[derive(Clone, Copy)]
pub struct PlanEnv<'a> {
    pub stack: &'a Stack,
    /// Where providers and node are resolved.
    pub search: &'a Search,
    /// `--port`, recorded in the stack's config by the sync.
    pub port: Option<u16>,
    /// `OYSTERUN_ROOT`.
    pub root: Option<&'a Path>,
    /// `OYSTERUN_NODE_BIN`.
    pub node_bin: Option<&'a str>,
    /// `npm_config_prefix`.
    pub npm_prefix: Option<&'a Path>,
    /// oyster's stable path, the launch program the plist names.
    pub launcher: &'a Path,
    /// `OYSTERUN_STACKS_DIR` (to find the roots other stacks remember).
    pub stacks_dir: Option<&'a Path>,
    /// Whether launchd runs the Host (macOS, or a launchctl set in the environment): then
    /// folders macOS's privacy protection guards are named ([`crate::host::privacy`]).
    pub launchd: bool,
}

/// Where the Host comes from, when the user said (`--root`, `--node-bin`).
#[derive(Debug, Clone, Default)]
pub struct HostInputs {
    pub root: Option<PathBuf>,
    pub node_bin: Option<PathBuf>,
}

/// One planned Host.
pub struct Plan {
    pub doc: ConfigDoc,
    pub changes: Vec<Change>,
    pub root: PathBuf,
    /// Why this root was chosen (setup's plan says it).
    pub root_origin: String,
    pub node: NodePin,
    pub port: u16,
    pub env: LaunchEnv,
    /// oyster's stable path: the Host's launch program is `<launcher> host exec --stack NAME`.
    pub launcher: PathBuf,
    pub plist: Vec<u8>,
    pub installed: Option<Installed>,
    /// One line per path the Host needs that lies in a privacy-protected folder (launchd
    /// only); printed by [`Plan::warn_privacy`].
    pub privacy: Vec<String>,
}

/// Whether planning may write (the config sync and the node version cache).
#[derive(Clone, Copy)]
pub enum Writes<'a> {
    /// `agent print`, `--dry-run`, setup's plan: nothing on disk changes.
    None,
    /// Sync the config (under its lock) and cache the node version, under the stack's
    /// lifecycle lock (the caller's proof that it is the one writer).
    Sync(&'a crate::sys::fs::Lock),
}

/// Builds the plan; with [`Writes::Sync`] the config sync is written first.
pub fn plan<'a>(
    inputs: impl Into<PlanEnv<'a>>,
    args: &HostInputs,
    writes: Writes<'_>,
) -> anyhow::Result<Plan> {
    let pe: PlanEnv<'a> = inputs.into();
    let stack = pe.stack;
    refuse_before_writing(&pe, args, writes)?;
    let installed = agentplist::read_installed(&stack.plist_path());
    let cache = stack.node_version_cache_path();
    let node = node::pin(&PinRequest {
        flag: args.node_bin.as_deref(),
        env: pe.node_bin,
        installed: installed.as_ref().and_then(Installed::node_bin),
        search: pe.search,
        cache: match writes {
            Writes::Sync(lock) => Some((cache.as_path(), lock)),
            Writes::None => None,
        },
    })?;
    let found = crate::host::root::find(&RootSearch {
        flag: args.root.as_deref(),
        env: pe.root,
        installed: installed.as_ref().and_then(Installed::repo_root),
        remembered: remembered_roots(&pe),
        node_bin: &node.path,
        npm_prefix: pe.npm_prefix,
    })?;
    let root = found.path;
    let root_origin = found.origin;
    let (doc, changes) = synced_config(&pe, &root, writes)?;
    let port = doc
        .port()
        .or(stack.default_port)
        .ok_or_else(|| no_port(stack))?;
    let provider_dirs = provider_dirs(pe, &doc);
    let env = launchenv::generate(&EnvInputs {
        node_bin: &node.path,
        provider_dirs: &provider_dirs,
        config_dir: &stack.config_dir,
        port,
        root: &root,
        stack_name: &stack.name,
        stack_root: &stack.root,
    })?;
    let plist = agentplist::render(&AgentSpec {
        label: &stack.label,
        launcher: pe.launcher,
        stack: &stack.name,
        root: &root,
        env: &env,
        log_path: &stack.log_path(),
    })?;
    let privacy = if pe.launchd {
        privacy_warnings(&pe, &root, &node.path, &provider_dirs)
    } else {
        vec![]
    };
    let plan = Plan {
        doc,
        changes,
        root,
        root_origin,
        node,
        port,
        env,
        launcher: pe.launcher.to_path_buf(),
        plist,
        installed,
        privacy,
    };
    if let Writes::Sync(_) = writes {
        plan.warn_privacy();
    }
    Ok(plan)
}

/// Everything that can refuse is decided before anything is written: a root the user gave
/// that can never go into a plist, then a port (a custom stack needs one recorded or given);
/// the node and the root are checked by the caller before the sync writes.
fn refuse_before_writing(
    pe: &PlanEnv<'_>,
    args: &HostInputs,
    writes: Writes<'_>,
) -> anyhow::Result<()> {
    let given = (args.root.as_deref().map(|d| (d, "--root")))
        .or_else(|| pe.root.map(|d| (d, "OYSTERUN_ROOT")));
    if let Some((dir, origin)) = given {
        crate::host::root::refuse_controls(dir, origin)?;
    }
    if let Writes::Sync(_) = writes {
        let mut preview = ConfigDoc::load(&pe.stack.config_path())?;
        sync(*pe, &mut preview, &mut vec![]);
        if preview.port().or(pe.stack.default_port).is_none() {
            return Err(no_port(pe.stack).into());
        }
    }
    Ok(())
}

/// The stack config after the sync (and the root remembered): written under the config's
/// lock with [`Writes::Sync`], only computed with [`Writes::None`].
fn synced_config(
    pe: &PlanEnv<'_>,
    root: &Path,
    writes: Writes<'_>,
) -> anyhow::Result<(ConfigDoc, Vec<Change>)> {
    let path = pe.stack.config_path();
    match writes {
        Writes::Sync(_) => config::update(&path, |doc, changes| {
            sync(*pe, doc, changes);
            doc.remember_root(root, changes);
            Ok(doc.clone())
        }),
        Writes::None => {
            let mut doc = ConfigDoc::load(&path)?;
            let mut changes = vec![];
            sync(*pe, &mut doc, &mut changes);
            Ok((doc, changes))
        }
    }
}

/// The privacy warnings for every path the Host needs: the root and its working directory,
/// the stack's directories, Node and the provider directories.
fn privacy_warnings(
    pe: &PlanEnv<'_>,
    root: &Path,
    node: &Path,
    provider_dirs: &[PathBuf],
) -> Vec<String> {
    let stack = pe.stack;
    let host_dir = root.join("host-service");
    let mut paths: Vec<(&str, &Path)> = vec![
        ("the Oysterun root", root),
        ("the Host's working directory", &host_dir),
        ("the stack's config dir", &stack.config_dir),
        ("the stack's run dir", &stack.run_dir),
        ("the stack's log dir", &stack.log_dir),
        ("the pinned Node", node),
    ];
    paths.extend(
        provider_dirs
            .iter()
            .map(|d| ("the provider directory", d.as_path())),
    );
    let mut out = crate::host::privacy::warnings(&stack.home, &paths, node);
    // The working directory lies in the root: one line for both.
    out.dedup_by(|b, a| a.contains("the Oysterun root") && b.contains("working directory"));
    out
}

/// The remembered roots to try: this stack's `oyster_root`; for a stack that has none, the
/// root the other stacks on this machine remember, when they all remember the same one (a
/// second stack needs no `--root`; disagreeing stacks are not guessed between).
fn remembered_roots(pe: &PlanEnv<'_>) -> Vec<(PathBuf, String)> {
    let read = |s: &Stack| {
        ConfigDoc::load(&s.config_path())
            .ok()
            .and_then(|d| d.remembered_root().map(Path::to_path_buf))
    };
    let stack = pe.stack;
    if let Some(own) = read(stack) {
        return vec![(
            own,
            format!(
                "the root remembered in {} ({})",
                stack.config_path().display(),
                config::ROOT_KEY
            ),
        )];
    }
    let env = crate::host::stack::StackEnv {
        home: Some(stack.home.clone()),
        stacks_dir: pe.stacks_dir.map(Path::to_path_buf),
        config_dir: stack
            .config_dir_overridden
            .then(|| stack.config_dir.clone()),
    };
    let others: Vec<(String, PathBuf)> = crate::host::stack::discover(&env)
        .into_iter()
        .filter(|n| *n != stack.name)
        .filter_map(|n| {
            let s = Stack::new(&n, &env).ok()?;
            read(&s).map(|r| (n, r))
        })
        .collect();
    match others.as_slice() {
        [(name, root), rest @ ..] if rest.iter().all(|(_, r)| r == root) => vec![(
            root.clone(),
            format!(
                "the root stack {name} remembers ({} in its config)",
                config::ROOT_KEY
            ),
        )],
        _ => vec![],
    }
}

fn no_port(stack: &Stack) -> Invalid {
    Invalid::new(format!(
        "stack {} has no port yet; pass --port N once and it is recorded in {}",
        stack.name,
        stack.config_path().display()
    ))
}

/// The stack config sync applied to a document: providers, then `--port`.
pub fn sync<'a>(inputs: impl Into<PlanEnv<'a>>, doc: &mut ConfigDoc, changes: &mut Vec<Change>) {
    let pe: PlanEnv<'a> = inputs.into();
    doc.sync_providers(pe.search, changes);
    if let Some(port) = pe.port {
        doc.set(config::PORT_KEY, serde_json::Value::from(port), changes);
    }
}

/// Directories of resolved, non-disabled providers, in registry order.
pub fn provider_dirs<'a>(inputs: impl Into<PlanEnv<'a>>, doc: &ConfigDoc) -> Vec<PathBuf> {
    let pe: PlanEnv<'a> = inputs.into();
    PROVIDERS
        .iter()
        .filter(|p| doc.intent(p) != Intent::Disabled)
        .filter_map(|p| doc.resolve(p, pe.search).path().map(Path::to_path_buf))
        .filter_map(|path| path.parent().map(Path::to_path_buf))
        .collect()
}

impl Plan {
    /// Prints the privacy warnings, once per run however often the stack is planned.
    pub fn warn_privacy(&self) {
        use std::sync::atomic::{AtomicBool, Ordering};
        static SAID: AtomicBool = AtomicBool::new(false);
        if self.privacy.is_empty() || SAID.swap(true, Ordering::SeqCst) {
            return;
        }
        for line in &self.privacy {
            crate::output::printer().warn(line);
        }
    }

    /// Whether the installed plist differs from the planned one.
    pub fn plist_changed(&self) -> bool {
        self.installed.as_ref().map(|i| i.bytes.as_slice()) != Some(self.plist.as_slice())
    }

    /// The full environment the Host gets when oyster starts it (direct startup, setup's npm,
    /// doctor's probe): the one generator's output plus launchd's base.
    pub fn host_environment(&self, home: &Path) -> anyhow::Result<Vec<(String, String)>> {
        Ok(launchenv::host_environment(&self.env, home)?)
    }

    /// The launch program's arguments after oyster's path (`host exec --stack NAME`), as the
    /// plist's `ProgramArguments` has them.
    pub fn launch_arguments(&self, stack: &str) -> Vec<String> {
        agentplist::launch_arguments(stack)
    }
}
