//! The Host plan: everything one start of the Host needs, computed once and shared by the
//! LaunchAgent, direct startup and setup — the merged config, the pinned Node, the root, the
//! port, the generated environment and the plist bytes.

use std::path::{Path, PathBuf};

use crate::config::{self, Change, ConfigDoc};
use crate::context::Context;
use crate::error::Invalid;
use crate::host::launchenv::{self, EnvInputs, LaunchEnv};
use crate::host::node::{self, NodePin, PinRequest};
use crate::host::plist::{self as agentplist, AgentSpec, Installed};
use crate::host::root::RootSearch;
use crate::provider::registry::PROVIDERS;
use crate::provider::resolve::Intent;

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
pub fn plan(ctx: &Context, args: &HostInputs, writes: Writes<'_>) -> anyhow::Result<Plan> {
    let stack = &ctx.stack;
    // A root the user gave that can never go into a plist is refused before the sync writes.
    let given = (args.root.as_deref().map(|d| (d, "--root")))
        .or_else(|| ctx.env.root.as_deref().map(|d| (d, "OYSTERUN_ROOT")));
    if let Some((dir, origin)) = given {
        crate::host::root::refuse_controls(dir, origin)?;
    }
    // Everything that can refuse is decided before anything is written: a port first (a
    // custom stack needs one recorded or given), then the node and the root.
    if let Writes::Sync(_) = writes {
        let mut preview = ConfigDoc::load(&stack.config_path())?;
        sync(ctx, &mut preview, &mut vec![]);
        if preview.port().or(stack.default_port).is_none() {
            return Err(no_port(stack).into());
        }
    }
    let installed = agentplist::read_installed(&stack.plist_path());
    let node_env = ctx.env.node_bin.clone();
    let cache = stack.run_dir.join("node-version.cache");
    let node = node::pin(&PinRequest {
        flag: args.node_bin.as_deref(),
        env: node_env.as_deref(),
        installed: installed.as_ref().and_then(Installed::node_bin),
        search: &ctx.search,
        cache: match writes {
            Writes::Sync(lock) => Some((cache.as_path(), lock)),
            Writes::None => None,
        },
    })?;
    let found = crate::host::root::find(&RootSearch {
        flag: args.root.as_deref(),
        env: ctx.env.root.as_deref(),
        installed: installed.as_ref().and_then(Installed::repo_root),
        node_bin: &node.path,
        npm_prefix: ctx.env.npm_prefix.as_deref(),
    })?;
    let root = found.path;
    let root_origin = found.origin;
    let (doc, changes) = match writes {
        Writes::Sync(_) => {
            let path = stack.config_path();
            config::update(&path, |doc, changes| {
                sync(ctx, doc, changes);
                Ok(doc.clone())
            })?
        }
        Writes::None => {
            let mut doc = ConfigDoc::load(&stack.config_path())?;
            let mut changes = vec![];
            sync(ctx, &mut doc, &mut changes);
            (doc, changes)
        }
    };
    let port = doc
        .port()
        .or(stack.default_port)
        .ok_or_else(|| no_port(stack))?;
    let provider_dirs = provider_dirs(ctx, &doc);
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
        launcher: &ctx.launcher,
        stack: &stack.name,
        root: &root,
        env: &env,
        log_path: &stack.log_path(),
    })?;
    Ok(Plan {
        doc,
        changes,
        root,
        root_origin,
        node,
        port,
        env,
        launcher: ctx.launcher.clone(),
        plist,
        installed,
    })
}

fn no_port(stack: &crate::host::stack::Stack) -> Invalid {
    Invalid::new(format!(
        "stack {} has no port yet; pass --port N once and it is recorded in {}",
        stack.name,
        stack.config_path().display()
    ))
}

/// The stack config sync applied to a document: providers, then `--port`.
pub fn sync(ctx: &Context, doc: &mut ConfigDoc, changes: &mut Vec<Change>) {
    doc.sync_providers(&ctx.search, changes);
    if let Some(port) = ctx.port {
        doc.set(config::PORT_KEY, serde_json::Value::from(port), changes);
    }
}

/// Directories of resolved, non-disabled providers, in registry order.
pub fn provider_dirs(ctx: &Context, doc: &ConfigDoc) -> Vec<PathBuf> {
    PROVIDERS
        .iter()
        .filter(|p| doc.intent(p) != Intent::Disabled)
        .filter_map(|p| doc.resolve(p, &ctx.search).path().map(Path::to_path_buf))
        .filter_map(|path| path.parent().map(Path::to_path_buf))
        .collect()
}

impl Plan {
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
