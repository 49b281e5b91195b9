//! Release Setup's provider part (CONTRACT.md §7): plan everything first, ask at most one
//! `[y/N]` question, then apply with an undo journal.
//!
//! Cancelling at the question changes nothing: the plan phase only reads (no config write, no
//! lock file, no directory, no cache, no temp file, no background process), so there is nothing
//! to roll back. A failure after a side effect undoes every earlier one, in reverse order.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use serde_json::Value;

use crate::agent::launchctl::Launchctl;
use crate::agent::lifecycle::{Agent, Timing};
use crate::commands::Ctx;
use crate::config;
use crate::direct;
use crate::error::Invalid;
use crate::host::plan::{self, HostArgs, Plan, Writes};
use crate::provider::registry::{Provider, PROVIDERS};
use crate::provider::resolve::{self, Intent};
use crate::sys::fs as fsutil;
use crate::sys::process::{self, ChildEnv};

/// The exact words a cancelled setup prints.
pub const CANCELLED: &str = "Installation cancelled; no changes were made.";

/// How the Host connects (recorded as `connection_mode`; every mode merges the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
pub struct SetupOptions {
    pub mode: Mode,
    pub agent_folder: Option<PathBuf>,
    pub install_providers: bool,
    pub no_start: bool,
    pub host: HostArgs,
    pub timing: Timing,
}

/// Which service manager starts the Host.
enum Service {
    Launchd(Launchctl),
    Direct,
}

/// One provider install: npm next to the pinned Node, `--prefix` pinned to that Node's prefix.
struct Install {
    provider: &'static Provider,
    npm: PathBuf,
    prefix: PathBuf,
}

impl Install {
    fn argv(&self, verb: &str) -> Vec<String> {
        vec![
            verb.to_owned(),
            "-g".to_owned(),
            "--prefix".to_owned(),
            self.prefix.display().to_string(),
            self.provider.npm_package.to_owned(),
        ]
    }
    fn shown(&self) -> String {
        format!("{} {}", self.npm.display(), self.argv("install").join(" "))
    }
    fn installed_path(&self) -> PathBuf {
        self.prefix.join("bin").join(self.provider.binary)
    }
}

/// The complete plan, computed without writing anything.
struct SetupPlan {
    plan: Plan,
    installs: Vec<Install>,
    agent_folder: PathBuf,
    service: Service,
}

/// Runs setup: plan, show, maybe ask, apply.
pub fn run(ctx: &Ctx, opts: &SetupOptions) -> anyhow::Result<()> {
    let sp = make_plan(ctx, opts)?;
    show(ctx, opts, &sp);
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let install = if sp.installs.is_empty() {
        false
    } else if opts.install_providers {
        true
    } else if interactive {
        if !confirm(&sp.installs)? {
            println!("{CANCELLED}");
            return Ok(());
        }
        true
    } else {
        for i in &sp.installs {
            println!(
                "note: {} is not installed and will stay unavailable; pass --install-providers to run `{}`",
                i.provider.id,
                i.shown()
            );
        }
        false
    };
    apply(ctx, opts, sp, install)
}

fn make_plan(ctx: &Ctx, opts: &SetupOptions) -> anyhow::Result<SetupPlan> {
    let plan = plan::plan(ctx, &opts.host, Writes::None)?;
    let node_bin = &plan.node.path;
    let node_dir = node_bin.parent().unwrap_or(Path::new("/"));
    let prefix = node_dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    let installs = PROVIDERS
        .iter()
        .filter(|p| {
            plan.doc.intent(p) == Intent::Auto
                && plan.doc.resolve(p, &ctx.search).resolved.is_none()
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
    let service = match Launchctl::locate() {
        Ok(lc) => Service::Launchd(lc),
        Err(_) => Service::Direct,
    };
    Ok(SetupPlan {
        plan,
        installs,
        agent_folder,
        service,
    })
}

fn expand(ctx: &Ctx, dir: &Path) -> Result<PathBuf, Invalid> {
    let s = dir.to_string_lossy();
    let p = match s.strip_prefix("~/") {
        Some(rest) => ctx.stack.home.join(rest),
        None if s == "~" => ctx.stack.home.clone(),
        None => dir.to_owned(),
    };
    if !p.is_absolute() {
        return Err(Invalid(format!(
            "--agent-folder {s:?} is not a full path; give an absolute path or one starting with ~/"
        )));
    }
    Ok(resolve::normalize(&p))
}

fn show(ctx: &Ctx, opts: &SetupOptions, sp: &SetupPlan) {
    let st = &ctx.stack;
    println!(
        "Oysterun setup for stack {} (mode: {})",
        st.name,
        opts.mode.as_str()
    );
    println!(
        "  node:        {} {}",
        st.tilde(&sp.plan.node.path),
        sp.plan.node.version
    );
    for p in PROVIDERS {
        let r = sp.plan.doc.resolve(p, &ctx.search);
        let line = match (sp.plan.doc.intent(p), &r.resolved) {
            (Intent::Disabled, _) => "disabled (kept disabled)".to_owned(),
            (intent, Some(path)) => format!("{} ({})", st.tilde(path), intent.as_str()),
            (Intent::Manual, None) => format!(
                "unavailable, manual command kept: {}",
                crate::output::redact::tilde_text(&st.home, r.reason.as_deref().unwrap_or(""))
            ),
            (Intent::Auto, None) => match sp.installs.iter().find(|i| i.provider.id == p.id) {
                Some(i) => format!("not installed; can be installed with `{}`", i.shown()),
                None => "not installed".to_owned(),
            },
        };
        println!("  {:<12} {line}", format!("{}:", p.id));
    }
    println!("  config:      {}", st.tilde(&st.config_path()));
    let exists = if sp.agent_folder.is_dir() {
        "exists"
    } else {
        "will be created"
    };
    println!("  AgentFolder: {} ({exists})", st.tilde(&sp.agent_folder));
    match &sp.service {
        Service::Launchd(lc) => println!(
            "  service:     LaunchAgent {} via {}",
            st.tilde(&st.plist_path()),
            lc.describe()
        ),
        Service::Direct => println!(
            "  service:     direct start with a pid file ({}); launchctl is not available here",
            st.tilde(&st.pid_path())
        ),
    }
    println!(
        "  start:       {}",
        if opts.no_start {
            "no (--no-start)"
        } else {
            "yes, then verify"
        }
    );
}

/// Asks the one question. Enter, n, no, anything else, EOF or Ctrl-C say no.
fn confirm(installs: &[Install]) -> anyhow::Result<bool> {
    let names: Vec<&str> = installs.iter().map(|i| i.provider.display_name).collect();
    let cmds: Vec<String> = installs
        .iter()
        .map(|i| format!("`{}`", i.shown()))
        .collect();
    let (is, it) = if installs.len() == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    print!(
        "{} {is} not installed. Install {it} now with {}? [y/N] ",
        names.join(" and "),
        cmds.join(" and ")
    );
    std::io::stdout().flush()?;
    let _guard = CancelOnInterrupt::install();
    let mut line = String::new();
    let n = std::io::stdin().lock().read_line(&mut line)?;
    if n == 0 {
        // EOF: end the prompt's line before the message.
        println!();
    }
    let answer = line.trim().to_ascii_lowercase();
    Ok(answer == "y" || answer == "yes")
}

/// While the question is open, Ctrl-C prints the cancel message and exits 0. Nothing has been
/// changed at that point, so leaving at once is exactly "no changes were made".
struct CancelOnInterrupt {
    previous: libc::sighandler_t,
}

extern "C" fn on_interrupt(_: libc::c_int) {
    const MSG: &[u8] = b"\nInstallation cancelled; no changes were made.\n";
    // SAFETY: write and _exit are async-signal-safe.
    unsafe {
        libc::write(1, MSG.as_ptr().cast(), MSG.len());
        libc::_exit(0);
    }
}

impl CancelOnInterrupt {
    fn install() -> CancelOnInterrupt {
        // SAFETY: installing a handler that only calls async-signal-safe functions.
        let previous = unsafe {
            libc::signal(
                libc::SIGINT,
                on_interrupt as *const () as libc::sighandler_t,
            )
        };
        CancelOnInterrupt { previous }
    }
}

impl Drop for CancelOnInterrupt {
    fn drop(&mut self) {
        // SAFETY: restoring the handler that was in place before.
        unsafe { libc::signal(libc::SIGINT, self.previous) };
    }
}

/// One side effect and how to take it back.
enum Undo {
    /// Files and directories that did not exist before setup applied anything; removed last
    /// (directories only while empty, so nothing a user put there is lost).
    Created {
        files: Vec<PathBuf>,
        dirs: Vec<PathBuf>,
    },
    NpmUninstall {
        install_idx: usize,
    },
    /// A file's previous bytes (`None`: it did not exist), restored with `mode`.
    File {
        path: PathBuf,
        bytes: Option<Vec<u8>>,
        mode: Option<u32>,
    },
    AgentFolder(PathBuf),
    StopHost,
}

fn apply(ctx: &Ctx, opts: &SetupOptions, sp: SetupPlan, install: bool) -> anyhow::Result<()> {
    let mut journal: Vec<Undo> = vec![created_paths(ctx, &sp)];
    let result = apply_steps(ctx, opts, &sp, install, &mut journal);
    if let Err(err) = result {
        let undone = roll_back(ctx, &sp, journal);
        let list = if undone.is_empty() {
            "nothing had been changed".to_owned()
        } else {
            undone.join("; ")
        };
        return Err(err.context(format!("setup failed; rolled back: {list}")));
    }
    Ok(())
}

fn apply_steps(
    ctx: &Ctx,
    opts: &SetupOptions,
    sp: &SetupPlan,
    install: bool,
    journal: &mut Vec<Undo>,
) -> anyhow::Result<()> {
    let st = &ctx.stack;
    let base = npm_env(ctx, &sp.plan);
    // 1. Provider installs.
    let mut installed: Vec<(&Provider, PathBuf)> = vec![];
    if install {
        for (idx, i) in sp.installs.iter().enumerate() {
            println!("Installing {}: {}", i.provider.display_name, i.shown());
            let args = i.argv("install");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = process::run(
                &i.npm,
                &args,
                ChildEnv::Exactly(&base),
                Duration::from_secs(600),
            )?;
            journal.push(Undo::NpmUninstall { install_idx: idx });
            if out.code != 0 {
                anyhow::bail!(
                    "`{}` exited {}: {}",
                    i.shown(),
                    out.code,
                    out.stderr.trim().lines().last().unwrap_or("")
                );
            }
            let path = i.installed_path();
            resolve::check_executable(&path).map_err(|why| {
                anyhow::anyhow!("npm reported success, but {} {why}", path.display())
            })?;
            installed.push((i.provider, path));
        }
    }
    // 2. The config: the same preservation-first merge, plus mode, AgentFolder and installs.
    let path = st.config_path();
    let before = std::fs::read(&path).ok();
    journal.push(Undo::File {
        path: path.clone(),
        bytes: before,
        mode: None,
    });
    let ((), changes) = config::update(&path, |doc, changes| {
        // Migrate first: an installed path set before migration would read as user-owned.
        plan::sync(ctx, doc, changes);
        for (p, exe) in &installed {
            doc.set(
                p.command_key,
                Value::String(exe.display().to_string()),
                changes,
            );
        }
        doc.set(
            config::MODE_KEY,
            Value::String(opts.mode.as_str().into()),
            changes,
        );
        doc.set(
            config::BROWSE_KEY,
            Value::String(sp.agent_folder.display().to_string()),
            changes,
        );
        Ok(())
    })?;
    crate::commands::config::report(ctx, &changes);
    // 3. The AgentFolder.
    if !sp.agent_folder.is_dir() {
        fsutil::create_dir_all(&sp.agent_folder, 0o755)?;
        journal.push(Undo::AgentFolder(sp.agent_folder.clone()));
        println!("Created the AgentFolder {}", st.tilde(&sp.agent_folder));
    }
    // 4. The service, planned again now that the config holds the merged values.
    let plan = plan::plan(ctx, &opts.host, Writes::None)?;
    match (&sp.service, opts.no_start) {
        (Service::Launchd(_), true) => {
            let plist = st.plist_path();
            journal.push(Undo::File {
                path: plist.clone(),
                bytes: std::fs::read(&plist).ok(),
                mode: Some(0o644),
            });
            let wrote = crate::agent::plist::write(&plist, &plan.plist, &st.log_dir)?;
            println!(
                "{}: {} (not started: --no-start)",
                st.tilde(&plist),
                if wrote { "written" } else { "unchanged" }
            );
        }
        (Service::Launchd(_), false) => {
            // The lifecycle rolls its own plist back when the Host does not verify.
            let agent = Agent::new(st)?;
            let outcome = agent.apply(&plan, "setup", false, opts.timing)?;
            println!(
                "Host verified: pid {}, /health 200 after {} ms.",
                outcome.verified.pid,
                outcome.verified.health_after.as_millis()
            );
        }
        (Service::Direct, true) => println!(
            "Not started (--no-start); `oyster host start --stack {}` starts it.",
            st.name
        ),
        (Service::Direct, false) => {
            let started = direct::start(
                st,
                &plan,
                &direct::StartOptions {
                    wait: opts.timing.wait,
                    settle: opts.timing.settle,
                },
            )?;
            journal.push(Undo::StopHost);
            println!(
                "Host started directly: pid {}, /health 200 after {} ms, environment verified.",
                started.pid,
                started.health_after.as_millis()
            );
        }
    }
    println!("Setup complete.");
    Ok(())
}

/// What setup's steps may create: the directory chains under HOME and the lock and pid files.
fn created_paths(ctx: &Ctx, sp: &SetupPlan) -> Undo {
    let st = &ctx.stack;
    let mut files: Vec<PathBuf> = vec![
        st.config_dir.join("config.json.lock"),
        st.pid_path(),
        st.run_dir.join("oysterun-host.pid.lock"),
        st.run_dir.join("node-version.cache"),
    ];
    files.retain(|f| !f.exists());
    let mut dirs = vec![];
    for leaf in [
        st.config_dir.clone(),
        sp.agent_folder.clone(),
        st.plist_path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        st.run_dir.clone(),
    ] {
        let mut d = leaf.as_path();
        while !d.exists() && d.starts_with(&st.home) && d != st.home {
            dirs.push(d.to_path_buf());
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
    }
    // Deepest first, so parents empty out before their turn.
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    Undo::Created { files, dirs }
}

/// The environment npm runs with: the Host's generated one plus what launchd would give.
fn npm_env(ctx: &Ctx, plan: &Plan) -> Vec<(String, String)> {
    let mut env = direct::base_env(&ctx.stack.home);
    env.extend(plan.env.pairs());
    env
}

/// Undoes the journal in reverse; returns what was undone, in words.
fn roll_back(ctx: &Ctx, sp: &SetupPlan, journal: Vec<Undo>) -> Vec<String> {
    let st = &ctx.stack;
    let mut said = vec![];
    for undo in journal.into_iter().rev() {
        let outcome = match undo {
            Undo::Created { files, dirs } => {
                let mut removed = 0;
                for f in files.iter().filter(|f| f.exists()) {
                    removed += usize::from(std::fs::remove_file(f).is_ok());
                }
                for d in &dirs {
                    removed += usize::from(std::fs::remove_dir(d).is_ok());
                }
                if removed == 0 {
                    continue;
                }
                Ok(format!(
                    "removed {removed} file(s) and empty director(ies) it had created"
                ))
            }
            Undo::StopHost => direct::stop(st).map(|_| "stopped the Host it started".to_owned()),
            Undo::AgentFolder(dir) => match std::fs::remove_dir(&dir) {
                Ok(()) => Ok(format!("removed the AgentFolder {}", st.tilde(&dir))),
                Err(_) => Ok(format!(
                    "kept the AgentFolder {} (no longer empty)",
                    st.tilde(&dir)
                )),
            },
            Undo::File { path, bytes, mode } => match bytes {
                Some(b) => fsutil::write_atomic(&path, &b, mode)
                    .map(|_| format!("restored {}", st.tilde(&path)))
                    .map_err(Into::into),
                None => std::fs::remove_file(&path)
                    .or_else(ignore_missing)
                    .map(|()| format!("removed {}", st.tilde(&path)))
                    .map_err(Into::into),
            },
            Undo::NpmUninstall { install_idx } => {
                let i = &sp.installs[install_idx];
                let args = i.argv("uninstall");
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let env = npm_env(ctx, &sp.plan);
                process::run(
                    &i.npm,
                    &args,
                    ChildEnv::Exactly(&env),
                    Duration::from_secs(300),
                )
                .map_err(anyhow::Error::from)
                .and_then(|f| {
                    if f.code == 0 {
                        Ok(format!("uninstalled {}", i.provider.npm_package))
                    } else {
                        anyhow::bail!("`npm uninstall` exited {}", f.code)
                    }
                })
            }
        };
        said.push(outcome.unwrap_or_else(|e| format!("could not undo a step: {e:#}")));
    }
    for s in &said {
        eprintln!("rolled back: {s}");
    }
    said
}

fn ignore_missing(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}
