//! Release Setup's provider part (docs/behaviour.md §7): plan everything first, ask at most one
//! `[y/N]` question, then apply with an undo journal.
//!
//! Cancelling at the question changes nothing: the plan phase only reads (no config write, no
//! lock file, no directory, no cache, no temp file, no background process), so there is nothing
//! to roll back. A failure after a side effect undoes every earlier one, in reverse order. Each
//! side effect is journaled to a receipt before it is taken (`receipt.rs`): a setup killed
//! outright is taken back by the next one, before it plans.

mod created;
pub mod hooks;
pub mod login;
pub mod receipt;
mod said;
mod steps;

use created::created_paths;
pub use receipt::{recover, Recovered};
pub use said::Said;
use steps::{Before, Undo, Undoing};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::agent::lifecycle::Timing;
use crate::config;
use crate::context::Context;
use crate::direct;
use crate::error::Interrupted;
use crate::error::Invalid;
use crate::host::plan::{self, HostInputs, Plan};
use crate::launchctl::Launchctl;
use crate::output::audit::Action;
use crate::provider::registry::{Provider, PROVIDERS};
use crate::provider::resolve::{self, Intent};
use crate::sys::fs::{self as fsutil, Lock};
use crate::sys::process::{self, ChildEnv};
use crate::sys::signal::{self, InterruptGuard};

/// How long one `npm install` may take.
const NPM_TIMEOUT: Duration = Duration::from_secs(600);

/// The exact words a cancelled setup prints.
pub const CANCELLED: &str = "Installation cancelled; no changes were made.";

/// How the Host connects (recorded as `connection_mode`; every mode merges the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Direct,
    CloudDirect,
    Managed,
    ManagedPending,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::CloudDirect => "cloud-direct",
            Mode::Managed => "managed",
            Mode::ManagedPending => "managed-pending",
        }
    }
}

/// What setup was asked to do.
#[derive(Debug, Clone)]
pub struct SetupOptions {
    /// `None`: keep the recorded mode (a re-run must not reset the user's choice), else direct.
    pub mode: Option<Mode>,
    pub agent_folder: Option<PathBuf>,
    pub install_providers: bool,
    pub no_start: bool,
    pub host: HostInputs,
    pub timing: Timing,
}

/// Which service manager starts the Host.
pub enum Service {
    Launchd(Launchctl),
    /// The systemd user manager, reached through this systemctl.
    Systemd(std::rc::Rc<crate::systemd::Systemctl>),
    /// No manager: the pid-file direct Host, and why.
    Direct(String),
}

/// One provider install: npm next to the pinned Node, `--prefix` pinned to that Node's prefix.
pub struct Install {
    pub provider: &'static Provider,
    pub npm: PathBuf,
    pub prefix: PathBuf,
}

impl Install {
    fn argv(&self, verb: &str) -> Vec<String> {
        steps::npm_argv(verb, &self.prefix, self.provider.npm_package)
    }
    pub fn shown(&self) -> String {
        format!("{} {}", self.npm.display(), self.argv("install").join(" "))
    }
    fn installed_path(&self) -> PathBuf {
        self.prefix.join("bin").join(self.provider.binary)
    }
}

/// The complete plan, computed without writing anything.
pub struct SetupPlan {
    pub plan: Plan,
    /// config.json as the plan found it (`None`: absent): a setup whose lock finds another
    /// file there decided on a state that is gone, and changes nothing.
    read: Option<steps::Stamp>,
    /// The file that records the Host as the plan found it: the direct Host's pid file when
    /// the plan starts it without a service manager (a `host start` or `host stop` since made
    /// the plan's start stale), the job's definition under one (an `install` or `uninstall`
    /// since made its step stale).
    host: Option<(PathBuf, Option<steps::Stamp>)>,
    pub installs: Vec<Install>,
    pub agent_folder: PathBuf,
    pub service: Service,
}

/// Plans setup without writing anything.
pub fn make_plan(ctx: &Context, opts: &SetupOptions) -> anyhow::Result<SetupPlan> {
    // Before the read: a write after it shows as another file.
    let read = steps::Stamp::of(&ctx.stack.config_path());
    let plan = plan::plan(ctx, &opts.host)?;
    plan.warn_privacy(ctx.reporter());
    let node_bin = &plan.node.path;
    let node_dir = node_bin.parent().unwrap_or(Path::new("/"));
    let prefix = node_dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    let installs = PROVIDERS
        .iter()
        .filter(|p| {
            plan.doc.intent(p) == Intent::Auto && plan.doc.resolve(p, &ctx.search).path().is_none()
        })
        .map(|p| Install {
            provider: p,
            npm: node_dir.join("npm"),
            prefix: prefix.clone(),
        })
        .collect();
    let agent_folder = match (
        &opts.agent_folder,
        plan.doc
            .value()
            .get(config::BROWSE_KEY)
            .and_then(Value::as_str),
    ) {
        (Some(dir), _) => expand(ctx, dir)?,
        (None, Some(existing)) => PathBuf::from(existing),
        (None, None) => ctx.stack.home.join("OysterunAgents"),
    };
    let service = match (ctx.manager(), ctx.launchctl()) {
        (Ok(crate::context::Manager::Launchd), Ok(lc)) => Service::Launchd(lc.clone()),
        (Ok(crate::context::Manager::Systemd(sc)), _) => Service::Systemd(sc),
        (Err(e), _) if e.is_invalid_input() => return Err(e.into()),
        (Err(e), _) => Service::Direct(format!("{e}")),
        (Ok(_), Err(e)) => Service::Direct(format!("{e}")),
    };
    // What says the Host's state beside config.json: the pid file of a Host the plan starts
    // directly; under a service manager, the job's definition (a respawn rewrites the pid file,
    // only an install, restart, regenerate or uninstall the definition).
    let host = match service {
        Service::Direct(_) if opts.no_start => None,
        Service::Direct(_) => Some(ctx.stack.pid_path()),
        _ => Some(crate::manager::definition(ctx)),
    }
    .map(|path| {
        let stamp = steps::Stamp::of(&path);
        (path, stamp)
    });
    Ok(SetupPlan {
        plan,
        read,
        host,
        installs,
        agent_folder,
        service,
    })
}

fn expand(ctx: &Context, dir: &Path) -> Result<PathBuf, Invalid> {
    let s = dir.to_string_lossy();
    let p = match s.strip_prefix("~/") {
        Some(rest) => ctx.stack.home.join(rest),
        None if s == "~" => ctx.stack.home.clone(),
        None => dir.to_owned(),
    };
    if !p.is_absolute() {
        return Err(Invalid::new(
            Said::AgentFolderNotAbsolute {
                given: s.into_owned(),
            }
            .to_string(),
        ));
    }
    Ok(resolve::normalize(&p))
}

/// Setup's journal, written ahead to its receipt.
type Journal<'l> = receipt::Journaled<'l>;

/// The Host login setup writes: the user name and Oysterun's hash of the password.
pub struct NewLogin {
    pub user: String,
    pub hash: String,
}

/// Applies a plan; on failure every earlier side effect is rolled back. Returns the Host plan
/// it applied (what the login QR step needs after a start).
pub fn apply(
    ctx: &Context,
    opts: &SetupOptions,
    sp: SetupPlan,
    install: bool,
    login: Option<&NewLogin>,
) -> anyhow::Result<Plan> {
    let st = &ctx.stack;
    let _guard = InterruptGuard::install();
    let lock = ctx.lock_stack("setup")?;
    // A receipt under the lock is a dead run's, left while this one planned and asked (a
    // live oyster held the lock then): taken back, and this run's plan, made before, is stale.
    if let Recovered::TookBack(said) = receipt::recover_locked(ctx, opts, &lock)? {
        return Err(crate::error::Failed::new(
            Said::TookBackWhileWaiting { said }.to_string(),
            Said::RunAgain {
                setup: ctx.hints().cmd("setup"),
            }
            .to_string(),
        )
        .into());
    }
    refuse_if_stale(ctx, &sp)?;
    // Reverts are recorded in the stack's audit log when it has one already: a setup that
    // rolls back entirely leaves no file it did not find. Each step is written to the
    // receipt before it is taken: a setup killed outright is taken back by the next one.
    let mut journal = Journal::new(ctx, &lock);
    // Everything setup may create is listed once it holds the lock (which lives outside the
    // stack and creates none of it): what another oyster created while this one waited for it
    // is not this run's to remove. A stack this setup creates is removed whole by a rollback:
    // its Host log and audit line too, so a failed first setup leaves no stack behind (the
    // failure showed the log's tail).
    let fresh = std::fs::symlink_metadata(&st.root).is_err();
    let above = st.root.parent().filter(|p| *p != st.home && !p.exists());
    let created = created_paths(ctx, &sp);
    let applied = (|| {
        if fresh {
            journal.push(Undo::Stack {
                root: st.root.clone(),
                above: above.map(Path::to_path_buf),
            })?;
        }
        journal.push(Undo::Created(created))?;
        apply_steps(ctx, opts, &sp, (install, login), &lock, &mut journal)
    })();
    match applied {
        Ok(plan) => {
            journal.finish();
            Ok(plan)
        }
        Err(err) => {
            let mut cx = Undoing {
                ctx,
                plan: &sp.plan,
                lock: &lock,
                regenerate: None,
                reapply: false,
            };
            let undone = journal.roll_back(&mut cx);
            // Released only after the rollback: no other oyster sees the half-applied stack.
            drop(lock);
            Err(rolled_back(&undone.said, err))
        }
    }
}

/// Refuses, having changed nothing, when another oyster changed what the plan was made from
/// while this setup asked or waited for the lock: config.json, or the file that records the
/// Host (the pid file of a direct start, the job's definition under a service manager).
fn refuse_if_stale(ctx: &Context, sp: &SetupPlan) -> anyhow::Result<()> {
    let st = &ctx.stack;
    let stack = st.name.clone();
    let changed = if steps::Stamp::of(&st.config_path()) != sp.read {
        Said::ChangedWhileWaiting { stack }
    } else if let Some((path, _)) = sp
        .host
        .as_ref()
        .filter(|(path, read)| steps::Stamp::of(path) != *read)
    {
        Said::HostChangedWhileWaiting {
            stack,
            record: path.clone(),
        }
    } else {
        return Ok(());
    };
    let setup = ctx.hints().cmd("setup");
    Err(crate::error::Failed::new(changed.to_string(), Said::RunAgain { setup }.to_string()).into())
}

/// The error setup ends with after its rollback: the real cause first, then what was undone
/// (the order a reader needs them); an interrupt says only what was undone.
fn rolled_back(undone: &[String], err: anyhow::Error) -> anyhow::Error {
    let list = if undone.is_empty() {
        "nothing had been changed".to_owned()
    } else {
        undone.join("; ")
    };
    match signal::cause(err) {
        Ok(sig) => Interrupted(sig, format!("setup rolled back: {list}")).into(),
        Err(err) => err.context(crate::error::Afterword {
            lead: "setup failed".into(),
            after: format!("rolled back: {list}"),
        }),
    }
}

fn apply_steps(
    ctx: &Context,
    opts: &SetupOptions,
    sp: &SetupPlan,
    (install, login): (bool, Option<&NewLogin>),
    lock: &Lock,
    journal: &mut Journal,
) -> anyhow::Result<Plan> {
    // 1. Provider installs.
    let installed = if install {
        let (env, declared) = npm_environment(ctx, &sp.plan)?;
        if !declared.is_empty() {
            ctx.reporter().note(&format!(
                "npm runs with the declared {} (`oyster env`)",
                declared.join(", ")
            ));
        }
        install_providers(ctx, sp, &env, journal)?
    } else {
        vec![]
    };
    // 2. The config: the same preservation-first merge, plus mode, AgentFolder, installs and
    // the Host login.
    merge_config(ctx, opts, sp, (&installed, login), journal)?;
    // 3. The AgentFolder.
    if !sp.agent_folder.is_dir() {
        journal.push(Undo::AgentFolder(sp.agent_folder.clone()))?;
        if let Err(e) = fsutil::create_dir_all(&sp.agent_folder, 0o755) {
            journal.pop();
            return Err(e.into());
        }
        ctx.reporter().line(&format!(
            "Created the AgentFolder {}",
            sp.agent_folder.display()
        ));
    }
    // 4. The service, planned again now that the config holds the merged values.
    let plan = plan::plan(ctx, &opts.host)?;
    start_service(ctx, opts, sp, &plan, lock, journal)?;
    Ok(plan)
}

/// An environment, name → value, in order.
type Env = Vec<(String, String)>;

/// The environment npm runs in: the Host's generated one, plus the declared variables a
/// network needs ([`crate::context::NOTICED`]: proxies, `NO_PROXY`, `NODE_EXTRA_CA_CERTS`;
/// `oyster env`, the organization's forced ones over them), so that an install behind a proxy
/// reaches the registry as the Host reaches the providers. Their values are secrets of this
/// run (npm's lines are shown); the names are returned to be said.
fn npm_environment(ctx: &Context, plan: &Plan) -> anyhow::Result<(Env, Vec<String>)> {
    let mut env = plan.host_environment(&ctx.stack.home)?;
    let declared = crate::host::declared::effective(&ctx.stack, &plan::managed(ctx));
    let network: Vec<(String, String)> = declared
        .vars
        .into_iter()
        .filter(|(k, _)| crate::context::NOTICED.contains(&k.as_str()))
        .collect();
    ctx.out.add_secrets(network.iter().map(|(_, v)| v.clone()));
    let names = network.iter().map(|(k, _)| k.clone()).collect();
    env.extend(network);
    Ok((env, names))
}

/// Installs each missing provider through the pinned Node's npm, journaled before npm runs.
fn install_providers<'p>(
    ctx: &Context,
    sp: &'p SetupPlan,
    base: &[(String, String)],
    journal: &mut Journal,
) -> anyhow::Result<Vec<(&'p Provider, PathBuf)>> {
    let mut installed: Vec<(&Provider, PathBuf)> = vec![];
    let out_ = ctx.reporter();
    for i in &sp.installs {
        // Installed since the plan (by another oyster this one waited for): used as it is,
        // and so never uninstalled by this run's rollback.
        let path = i.installed_path();
        if resolve::check_executable(&path).is_ok() {
            out_.line(&format!(
                "{} is installed already: {}",
                i.provider.display_name,
                path.display()
            ));
            installed.push((i.provider, path));
            continue;
        }
        out_.line(&format!(
            "Installing {}: {}",
            i.provider.display_name,
            i.shown()
        ));
        let args = i.argv("install");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        out_.waiting(
            &format!("npm to install {}", i.provider.npm_package),
            NPM_TIMEOUT,
        );
        // Journaled before npm runs: an install cut short (Ctrl-C, timeout) may have put
        // files in place before its group was killed, and uninstalling is harmless if not.
        journal.push(Undo::NpmUninstall {
            npm: i.npm.clone(),
            prefix: i.prefix.clone(),
            package: i.provider.npm_package.to_owned(),
            running: None,
        })?;
        // Its pid in the receipt once it runs; npm's own progress, indented and dimmed,
        // instead of minutes of silence.
        let mut recorded = Ok(());
        let out = process::Program::new(&i.npm)
            .args(args.iter().copied())
            .env(ChildEnv::Exactly(base))
            .timeout(NPM_TIMEOUT)
            .stream_started(
                &mut |pid| recorded = journal.npm_running(pid),
                &mut |_, line| {
                    if !line.trim().is_empty() {
                        out_.detail(&format!("    {line}"));
                    }
                },
            )?;
        recorded?;
        // A failed npm that finished and left nothing was not "installed": nothing to undo.
        if out.code != 0 && !i.installed_path().exists() {
            journal.pop();
        }
        if out.code != 0 {
            anyhow::bail!(
                "`{}` exited {}: {}",
                i.shown(),
                out.code,
                out.stderr.trim().lines().last().unwrap_or("")
            );
        }
        let path = i.installed_path();
        resolve::check_executable(&path)
            .map_err(|why| anyhow::anyhow!("npm reported success, but {} {why}", path.display()))?;
        installed.push((i.provider, path));
    }
    Ok(installed)
}

/// Merges the config: the sync's preservation-first merge, the remembered root, the installed
/// providers, the connection mode and the AgentFolder; journaled so a rollback restores it.
fn merge_config(
    ctx: &Context,
    opts: &SetupOptions,
    sp: &SetupPlan,
    (installed, login): (&[(&Provider, PathBuf)], Option<&NewLogin>),
    journal: &mut Journal,
) -> anyhow::Result<()> {
    let st = &ctx.stack;
    let path = st.config_path();
    // Through the one regular-file reader: a FIFO swapped in is refused, never waited on.
    let before = fsutil::read_regular(&path, config::MAX_CONFIG_BYTES)?;
    journal.push(Undo::File {
        path: path.clone(),
        mode: None,
        before: Before::of_config(before.as_deref()),
        written: None,
        bytes: Some(before),
    })?;
    let ((), changes) = config::update(&path, ctx.reporter(), |doc, changes| {
        // Migrate first: an installed path set before migration would read as user-owned.
        plan::sync(ctx, opts.host.port, doc, changes);
        doc.remember_root(&sp.plan.root, changes);
        for (p, exe) in installed {
            doc.set(
                p.command_key,
                Value::String(exe.display().to_string()),
                changes,
            );
        }
        let recorded = doc.value().get(config::MODE_KEY).and_then(Value::as_str);
        let mode = match (opts.mode, recorded) {
            (Some(m), _) => m.as_str().to_owned(),
            (None, Some(r)) => r.to_owned(),
            (None, None) => Mode::Direct.as_str().to_owned(),
        };
        doc.set(config::MODE_KEY, Value::String(mode), changes);
        doc.set(
            config::BROWSE_KEY,
            Value::String(sp.agent_folder.display().to_string()),
            changes,
        );
        if let Some(l) = login {
            doc.set(
                config::login::USER_KEY,
                Value::String(l.user.clone()),
                changes,
            );
            doc.set(
                config::login::HASH_KEY,
                Value::String(l.hash.clone()),
                changes,
            );
        }
        Ok(())
    })?;
    // The config as this run left it: the next setup takes it back only while it is that one.
    journal.stamp_written()?;
    crate::config::report(&ctx.stack.config_path(), &changes, ctx.reporter());
    Ok(())
}

/// Writes the plist (`--no-start`) or loads and verifies the Host, under launchd or directly.
fn start_service(
    ctx: &Context,
    opts: &SetupOptions,
    sp: &SetupPlan,
    plan: &Plan,
    lock: &Lock,
    journal: &mut Journal,
) -> anyhow::Result<()> {
    let st = &ctx.stack;
    match (&sp.service, opts.no_start) {
        (Service::Launchd(_) | Service::Systemd(_), true) => {
            let plist = crate::manager::definition(ctx);
            let bytes = fsutil::read_regular(&plist, crate::host::plist::MAX_PLIST_BYTES)?;
            journal.push(Undo::File {
                path: plist.clone(),
                mode: Some(0o644),
                // A definition holds the Host's environment (secrets among it): a receipt
                // keeps none of it; the next setup writes it again from the config.
                before: match bytes {
                    Some(_) => Before::Generated,
                    None => Before::Absent,
                },
                written: None,
                bytes: Some(bytes),
            })?;
            let wrote = crate::manager::write_definition(ctx, plan, lock)?;
            ctx.reporter().line(&format!(
                "{}: {} (not started: --no-start)",
                plist.display(),
                if wrote { "written" } else { "unchanged" }
            ));
        }
        (Service::Launchd(_) | Service::Systemd(_), false) => {
            start_job(ctx, opts, plan, lock, journal)?
        }
        (Service::Direct(_), true) => ctx.reporter().line(&format!(
            "Not started (--no-start); `{}` starts it.",
            ctx.hints().cmd("host start")
        )),
        (Service::Direct(_), false) => {
            journal.push(Undo::StopHost)?;
            let started = direct::start(
                st,
                plan,
                &direct::StartOptions {
                    wait: opts.timing.wait,
                    settle: opts.timing.settle,
                    floor: ctx.env.proof_floor,
                    hints: ctx.hints(),
                    out: ctx.reporter(),
                },
            );
            // A start that failed stopped what it started.
            if started.is_err() {
                journal.pop();
            }
            let started = started?;
            journal.push(Undo::HostStarted)?;
            ctx.reporter().line(
                &Said::StartedDirectly {
                    pid: started.pid,
                    health_ms: started.health_after.as_millis(),
                }
                .to_string(),
            );
        }
    }
    Ok(())
}

/// Installs (or updates) and verifies the job under the service manager.
fn start_job(
    ctx: &Context,
    opts: &SetupOptions,
    plan: &Plan,
    lock: &Lock,
    journal: &mut Journal,
) -> anyhow::Result<()> {
    // The lifecycle rolls its own definition back when the Host does not verify.
    let mut agent = crate::manager::job(ctx, Some(lock))?;
    // Journaled for a setup killed outright (the lifecycle's own rollback takes a failed
    // start back): the next setup uninstalls a job installed where none was, or puts a
    // changed one back on the config it restores.
    let first = !crate::manager::definition(ctx).exists() && !agent.was_loaded();
    journal.push(Undo::Service { first })?;
    let applied = agent.apply(
        plan,
        Action::Setup,
        crate::service::Request::Apply,
        opts.timing,
    );
    if applied.is_err() {
        journal.pop();
    }
    let outcome = applied?;
    ctx.reporter().line(&format!(
        "Host verified: pid {}, /health 200 after {} ms.",
        outcome.verified.pid,
        outcome.verified.health_after.as_millis()
    ));
    Ok(())
}
