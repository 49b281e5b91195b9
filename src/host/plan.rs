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
    /// `OYSTER_MANAGED_PREFERENCES_DIR` (`/Library/Managed Preferences` when `None`).
    pub managed_dir: Option<&'a Path>,
    /// Whether launchd runs the Host (macOS, or a launchctl set in the environment): then
    /// folders macOS's privacy protection guards are named ([`crate::host::privacy`]).
    pub launchd: bool,
    /// Where planning says its notes and waits (the fallbacks it takes, a lock it waits for).
    pub out: &'a dyn crate::output::Reporter,
}

/// Where the Host comes from and where it listens, when the user said (`--root`,
/// `--node-bin`, `--port`).
#[derive(Debug, Clone, Default)]
pub struct HostInputs {
    pub root: Option<PathBuf>,
    pub node_bin: Option<PathBuf>,
    /// `--port`, recorded in the stack's config by the sync.
    pub port: Option<u16>,
}

/// Where the Host's port came from (said wherever it is shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortSource {
    /// `--port`.
    Flag,
    /// `port` in the stack's config.json.
    Config,
    /// The installed plist's `OYSTERUN_PORT`.
    Plist,
    /// The stack's own default (production 8802, staging 9902).
    Default,
}

impl PortSource {
    pub fn describe(self) -> &'static str {
        match self {
            PortSource::Flag => "--port",
            PortSource::Config => "the stack's config",
            PortSource::Plist => "the installed LaunchAgent",
            PortSource::Default => "the stack's default",
        }
    }
}

/// A port and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectivePort {
    pub port: u16,
    pub source: PortSource,
}

impl HostInputs {
    /// The one rule for the port the Host gets: `--port`, then the stack's config, then the
    /// installed plist, then the stack's default; `None` for a custom stack that has none yet.
    /// A caller that cannot read the config passes `None` for it only when it means to skip
    /// it; the readers that must not guess (status, doctor) leave the port unknown instead.
    pub fn effective_port(
        &self,
        stack: &Stack,
        config: Option<&ConfigDoc>,
        installed: Option<&Installed>,
    ) -> Option<EffectivePort> {
        let found = [
            (self.port, PortSource::Flag),
            (config.and_then(ConfigDoc::port), PortSource::Config),
            (installed.and_then(|i| i.env.port()), PortSource::Plist),
            (stack.default_port, PortSource::Default),
        ];
        found.into_iter().find_map(|(port, source)| {
            Some(EffectivePort {
                port: port?,
                source,
            })
        })
    }
}

/// One planned Host.
pub struct Plan {
    /// The stack's config with the sync applied (what [`write_config`] writes).
    pub doc: ConfigDoc,
    pub changes: Vec<Change>,
    /// `--port`, which the sync records.
    pub port_arg: Option<u16>,
    pub root: PathBuf,
    /// Why this root was chosen (setup's plan says it).
    pub root_origin: String,
    pub node: NodePin,
    pub port: u16,
    /// Where [`Plan::port`] came from ([`HostInputs::effective_port`]).
    pub port_source: PortSource,
    pub env: LaunchEnv,
    /// oyster's stable path: the Host's launch program is `<launcher> host exec --stack NAME`.
    pub launcher: PathBuf,
    pub plist: Vec<u8>,
    pub installed: Option<Installed>,
    /// One line per path the Host needs that lies in a privacy-protected folder (launchd
    /// only); printed by [`Plan::warn_privacy`].
    pub privacy: Vec<String>,
}

/// Builds the plan. Planning never writes: the config sync it computes is written by the run
/// that acts on it ([`write_config`]), after every refusal.
pub fn plan<'a>(inputs: impl Into<PlanEnv<'a>>, args: &HostInputs) -> anyhow::Result<Plan> {
    let pe: PlanEnv<'a> = inputs.into();
    let stack = pe.stack;
    let installed = agentplist::read_installed(&stack.plist_path(), pe.out);
    refuse_before_planning(&pe, args)?;
    let (node, found) = node_and_root(&pe, args, installed.as_ref())?;
    let root = found.path;
    let root_origin = found.origin;
    let mut doc = ConfigDoc::load(&stack.config_path())?;
    let mut changes = vec![];
    sync(pe, args.port, &mut doc, &mut changes);
    doc.remember_root(&root, &mut changes);
    let EffectivePort {
        port,
        source: port_source,
    } = args
        .effective_port(stack, Some(&doc), installed.as_ref())
        .ok_or_else(|| no_port(stack))?;
    let provider_dirs = provider_dirs(pe, &doc);
    let mut env = launchenv::generate(&EnvInputs {
        node_bin: &node.path,
        provider_dirs: &provider_dirs,
        config_dir: &stack.config_dir,
        port,
        root: &root,
        stack_name: &stack.name,
        stack_root: &stack.root,
    })?;
    // What the launch program adds at exec (never rendered into the plist or the unit).
    env.declared = crate::host::declared::effective(stack, &managed(pe)).vars;
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
    Ok(Plan {
        doc,
        changes,
        port_arg: args.port,
        root,
        root_origin,
        node,
        port,
        port_source,
        env,
        launcher: pe.launcher.to_path_buf(),
        plist,
        installed,
        privacy,
    })
}

/// The step that writes what planning computed into `config.json` (under its lock, merged
/// again with what is on disk now: the Host rewrites the file too), the root remembered, and
/// the pinned Node's version cached; said in one line per change. Run by a command that acts,
/// after every refusal.
pub fn write_config<'a>(
    inputs: impl Into<PlanEnv<'a>>,
    plan: &Plan,
    lock: &crate::sys::fs::Lock,
) -> anyhow::Result<Vec<Change>> {
    let pe: PlanEnv<'a> = inputs.into();
    node::record_version(&pe.stack.node_version_cache_path(), lock, &plan.node);
    let (_, changes) = config::update(&pe.stack.config_path(), pe.out, |doc, changes| {
        sync(pe, plan.port_arg, doc, changes);
        doc.remember_root(&plan.root, changes);
        Ok(())
    })?;
    plan.warn_privacy(pe.out);
    Ok(changes)
}

/// What a stack runs, without planning the rest (no port needed, nothing written): the pinned
/// Node and the Oysterun root, found as [`plan`] finds them.
pub fn node_and_root_only<'a>(
    inputs: impl Into<PlanEnv<'a>>,
    args: &HostInputs,
) -> anyhow::Result<(NodePin, crate::host::root::FoundRoot)> {
    let pe: PlanEnv<'a> = inputs.into();
    let installed = agentplist::read_installed(&pe.stack.plist_path(), pe.out);
    node_and_root(&pe, args, installed.as_ref())
}

/// The pinned Node, then the root it finds (a forced root or Node comes first, as a flag would:
/// a different flag was refused).
fn node_and_root(
    pe: &PlanEnv<'_>,
    args: &HostInputs,
    installed: Option<&Installed>,
) -> anyhow::Result<(NodePin, crate::host::root::FoundRoot)> {
    let cache = pe.stack.node_version_cache_path();
    let cache = Some(cache.as_path());
    let managed = managed(*pe);
    let node = match (args.node_bin.as_deref(), managed.path("node_bin")) {
        // Forced and not given (a different flag was refused): said as the profile's.
        (None, Some((path, e))) => node::pin_managed(path, &e.file, cache)?,
        (flag, _) => node::pin(&PinRequest {
            flag,
            env: pe.node_bin,
            installed: installed.and_then(Installed::node_bin),
            search: pe.search,
            out: pe.out,
            cache,
        })?,
    };
    let found = match (args.root.as_deref(), managed.path("root")) {
        (None, Some((dir, e))) => crate::host::root::find_managed(dir, &e.file)?,
        (flag, _) => crate::host::root::find(&RootSearch {
            flag,
            env: pe.root,
            installed: installed.and_then(Installed::repo_root),
            remembered: remembered_roots(pe),
            node_bin: &node.path,
            npm_prefix: pe.npm_prefix,
            out: pe.out,
        })?,
    };
    Ok((node, found))
}

/// What refuses before anything is looked up: a forced value the flags would change, and a
/// root the user gave that can never go into a plist.
fn refuse_before_planning(pe: &PlanEnv<'_>, args: &HostInputs) -> anyhow::Result<()> {
    refuse_managed(pe, args)?;
    let given = (args.root.as_deref().map(|d| (d, "--root")))
        .or_else(|| pe.root.map(|d| (d, "OYSTERUN_ROOT")));
    if let Some((dir, origin)) = given {
        crate::host::root::refuse_controls(dir, origin)?;
    }
    Ok(())
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
    PlanWords::NoPort {
        stack: stack.name.clone(),
        config: stack.config_path(),
    }
    .into()
}

/// What planning (and a port's rollback) says. Words: `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanWords {
    /// A custom stack with no port recorded and none given.
    NoPort { stack: String, config: PathBuf },
    /// The rollback left config.json's port alone: another command changed it meanwhile.
    PortChangedMeanwhile,
    /// The rollback put config.json's port back (`None`: no port again).
    PortBack(Option<serde_json::Value>),
}

/// The managed preferences of this user and stack (docs/fleet.md).
pub fn managed<'a>(inputs: impl Into<PlanEnv<'a>>) -> config::managed::Managed {
    let pe: PlanEnv<'a> = inputs.into();
    let user = crate::sys::user::name_of(crate::sys::user::uid());
    config::managed::Managed::load(pe.managed_dir, user.as_deref(), &pe.stack.name)
}

/// The stack config sync applied to a document: managed values first (so discovery respects
/// a forced intent), providers, `port` (`--port`), then managed values again (a forced value
/// wins).
pub fn sync<'a>(
    inputs: impl Into<PlanEnv<'a>>,
    port: Option<u16>,
    doc: &mut ConfigDoc,
    changes: &mut Vec<Change>,
) {
    let pe: PlanEnv<'a> = inputs.into();
    let managed = managed(pe);
    managed.apply(doc, changes);
    doc.sync_providers(pe.search, changes);
    if let Some(port) = port {
        doc.set(config::PORT_KEY, serde_json::Value::from(port), changes);
    }
    managed.apply(doc, changes);
}

/// A `--port`, `--root` or `--node-bin` that would change a forced value is refused before
/// anything is written (exit 1, naming the profile).
pub fn refuse_managed(pe: &PlanEnv<'_>, args: &HostInputs) -> Result<(), crate::error::Failed> {
    let managed = managed(*pe);
    if let (Some(port), Some((forced, e))) = (args.port, managed.port()) {
        if port != forced {
            return Err(config::managed::refusal(&format!("--port {port}"), e));
        }
    }
    for (given, key, flag) in [
        (args.root.as_deref(), "root", "--root"),
        (args.node_bin.as_deref(), "node_bin", "--node-bin"),
    ] {
        if let (Some(g), Some((forced, e))) = (given, managed.path(key)) {
            if g != forced {
                return Err(config::managed::refusal(
                    &format!("{flag} {}", g.display()),
                    e,
                ));
            }
        }
    }
    Ok(())
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
    pub fn warn_privacy(&self, out: &dyn crate::output::Reporter) {
        use std::sync::atomic::{AtomicBool, Ordering};
        static SAID: AtomicBool = AtomicBool::new(false);
        if self.privacy.is_empty() || SAID.swap(true, Ordering::SeqCst) {
            return;
        }
        for line in &self.privacy {
            out.warn(line);
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

/// The rollback of a run's port change (every manager's): puts config.json's port back to
/// what it was before `change`, unless another command changed it since (then it is left as
/// that command left it, and said).
pub fn put_back_port(
    path: &Path,
    change: &Change,
    out: &dyn crate::output::Reporter,
) -> anyhow::Result<String> {
    let key = config::PORT_KEY;
    let (reverted, _) = config::update(path, out, |doc, changes| {
        if doc.value().get(key) != Some(&change.to) {
            return Ok(false);
        }
        match &change.from {
            serde_json::Value::Null => doc.unset(key, changes),
            from => doc.set(key, from.clone(), changes),
        }
        Ok(true)
    })?;
    Ok(match (reverted, &change.from) {
        (false, _) => PlanWords::PortChangedMeanwhile,
        (true, serde_json::Value::Null) => PlanWords::PortBack(None),
        (true, from) => PlanWords::PortBack(Some(from.clone())),
    }
    .to_string())
}
