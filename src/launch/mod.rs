//! `oyster host exec --stack NAME`: the Host's launch program, run by launchd from the plist and
//! by direct startup, so both paths share one runner. A flow of its own (beside `agent`,
//! `direct` and `setup`): it builds on `host` (the plan's sync, the identity files) and never
//! the other way round.
//!
//! It does the per-launch duties of Oysterun's runner (`tool_scripts/run_oysterun_host.sh`) in
//! a few milliseconds, then `execve`s `OYSTERUN_NODE_BIN <root>/host-service/server.mjs` as the
//! same pid with the environment it was given, plus the declared variables:
//!
//! 1. the stack's directories (config, run, log, `<stack root>/matrix`), as the runner makes them;
//! 2. the stack config sync (the same preservation-first sync as `oyster config sync`, under the
//!    config lock), so a Host launchd restarts on its own (login, KeepAlive) starts synced;
//! 3. a comparison of its environment with what oyster generates for the stack: a difference is
//!    logged, and the Host still starts with what it was given (launchd's definition wins);
//! 4. Oysterun's own per-launch steps where the installed Oysterun has them (docs/decisions.md,
//!    "The launch program"): its dashboard-credentials entry point, and a check of the web-chat
//!    build;
//! 5. the identity files Oysterun's restart waits for, and oyster's exec record
//!    ([`crate::host::identity`]);
//! 6. the declared variables (`oyster env`, and the organization's forced ones;
//!    [`crate::host::declared`]), added to the environment it execs the Host with — the one
//!    thing it adds, and never from the caller: a file it may not use is logged and skipped.
//!
//! No launchctl call, no network, no prompt. Every failure before the exec is logged and never
//! stops the Host from starting. Where root and node come from is its own environment
//! (`OYSTERUN_REPO_ROOT`, `OYSTERUN_NODE_BIN`, which the plist sets): nothing is re-resolved.
//! Output goes to stderr, which is the Host log under launchd and under direct startup.
//!
//! This is the one place that reads the whole process environment: it is what it passes on.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::config::{self, Change, ConfigDoc};
use crate::context::Context;
use crate::error::Invalid;
use crate::host::identity::{self, ExecRecord, Origin};
use crate::host::launchenv::{self, EnvInputs};
use crate::host::plan;
use crate::host::root::SERVER;
use crate::host::stack::{Stack, DEFAULT_STACK};
use crate::output::audit::{Action, Audit, Step, StepOutcome};
use crate::sys::fs as fsutil;
use crate::sys::process::{self, ChildEnv};

/// Oysterun's dashboard-credentials entry point, relative to the root (run as its runner does).
pub const DASHBOARD_CREDENTIALS_SCRIPT: &str = "tool_scripts/stack_dashboard_credentials.mjs";
/// How long that entry point may take before it is killed (the Host starts regardless).
const DASHBOARD_CREDENTIALS_TIMEOUT: Duration = Duration::from_secs(30);
/// Oysterun's web-chat app and the marker a release build leaves beside it.
const WEB_CHAT_DIR: &str = "dev/client/web-chat";
const WEB_CHAT_MARKER: &str = "oysterun-release-prebuilt.marker";

/// Lines in the Host log, each saying who wrote it.
struct Log {
    head: String,
}

impl Log {
    fn line(&self, msg: &str) {
        crate::output::printer::printer().err(&format!("{}: {msg}", self.head));
    }
}

/// Runs the launch program. Returns only when the Host could not be exec'd (or the
/// environment lacks what names it), with the error.
pub fn run(ctx: &Context) -> anyhow::Result<Infallible> {
    let t0 = Instant::now();
    let env: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let node = required(&env, launchenv::NODE_BIN)?;
    let root = required(&env, launchenv::REPO_ROOT)?;
    let stack = launch_stack(ctx, &env);
    learn_secrets(ctx, &stack, &env);
    let declared = declared::for_launch(ctx, &stack);
    let pid = std::process::id();
    let started_at = identity::utc(SystemTime::now());
    let log = Log {
        head: format!(
            "[{started_at}] oyster host exec (stack {}, pid {pid})",
            stack.name
        ),
    };
    if let Err(e) = ensure_dirs(&stack) {
        log.line(&format!("{e:#}"));
    }
    declared::log_problems(&declared, &log);
    let config_said = sync_config(ctx, &stack, &env, &node, &root, &log);
    dashboard_credentials(ctx, &stack, &env, &node, &root, &log);
    check_web_chat(&root, &log);

    let host_dir = root.join("host-service");
    let server = root.join(SERVER);
    if let Err(e) = std::env::set_current_dir(&host_dir) {
        log.line(&format!("could not enter {}: {e}", host_dir.display()));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| host_dir.clone());
    // What would make the exec fail is checked before any identity file names this pid:
    // Oysterun's own scripts wait for those files and would take a dead pid for the Host.
    if let Err(why) = exec_target_problem(&node, &server) {
        // Files an earlier Host left, naming its dead pid, go too.
        let _ = crate::direct::remove_identity_if_dead(&stack);
        log.line(&format!(
            "{why}; no identity files were written, the Host does not start"
        ));
        return Err(crate::error::Failed::new(
            why,
            "reinstall Oysterun or Node, or run `oyster agent regenerate` (or `oyster host start`) to pin them again",
        )
        .into());
    }
    let (mut record, origin) =
        identity_files(&stack, &env, pid, &started_at, [&node, &server], &cwd);
    declared::record(&mut record, &declared);
    let identity_said = match write_identity(&stack, &record, &origin) {
        Ok(()) => "identity files written",
        Err(e) => {
            log.line(&format!("{e:#}; the Host starts anyway"));
            "identity files NOT written"
        }
    };
    let said = format!(
        "{config_said}; {identity_said}; {}; exec {} {} ({:.1} ms)",
        declared::summary(&declared),
        node.display(),
        server.display(),
        t0.elapsed().as_secs_f64() * 1000.0
    );
    Audit::new(stack.audit_path(), &stack.name, &stack.label).record(
        Action::Exec,
        Step::Launch,
        StepOutcome::Ok,
        Some(pid),
        &said,
    );
    log.line(&said);
    let err = declared::exec(&node, &server, &declared);
    Err(exec_failed(&stack, pid, &node, &server, &err, &log))
}

mod declared;

/// What this launch may quote in the Host log and the audit log is redacted: the launch
/// stack's config (it need not be the context's) and the values of variables named like
/// secrets in the environment it was given (keys a user added to the plist).
fn learn_secrets(ctx: &Context, stack: &Stack, env: &BTreeMap<String, String>) {
    ctx.out
        .add_secrets(config::secret_values_on_disk(&stack.config_path()));
    ctx.out.add_secrets(
        env.iter()
            .filter(|(k, _)| crate::output::redact::is_secret_key(k))
            .map(|(_, v)| v.clone()),
    );
}

/// The stack config sync at launch, tried briefly: a held config lock (a suspended oyster, a
/// stuck writer) must never keep the Host down, so past a few tens of milliseconds the sync is
/// skipped and said so. Then the launch environment is compared with what oyster generates.
/// Returns what to say about the config in the launch's summary line.
fn sync_config(
    ctx: &Context,
    stack: &Stack,
    env: &BTreeMap<String, String>,
    node: &Path,
    root: &Path,
    log: &Log,
) -> String {
    let synced = config::update_waiting(
        &stack.config_path(),
        config::LAUNCH_LOCK_WAIT,
        ctx.reporter(),
        |doc, changes| {
            plan::sync(ctx, None, doc, changes);
            // The root this Host runs from is the one to remember (the plist's, for a Host
            // another installer set up).
            doc.remember_root(root, changes);
            Ok(doc.clone())
        },
    );
    let said = match &synced {
        Ok((_, changes)) if changes.is_empty() => "config unchanged".to_owned(),
        Ok((_, changes)) => {
            log_changes(log, changes);
            format!("config synced ({} change(s))", changes.len())
        }
        Err(e) => match lock_holder(e) {
            Some(holder) => {
                log.line(&format!(
                    "config sync skipped: locked by {holder}; the Host starts with the config as it is"
                ));
                "config sync skipped".to_owned()
            }
            None => {
                log.line(&format!(
                    "the config sync failed; the Host starts anyway: {e:#}"
                ));
                "config sync failed".to_owned()
            }
        },
    };
    match &synced {
        Ok((doc, _)) => compare_env(ctx, stack, doc, env, node, root, log),
        Err(_) => log.line("the environment was not compared with oyster's (no usable config)"),
    }
    said
}

/// The exec record and the origin file for this launch, about to exec `argv` in `cwd`.
fn identity_files(
    stack: &Stack,
    env: &BTreeMap<String, String>,
    pid: u32,
    started_at: &str,
    argv: [&Path; 2],
    cwd: &Path,
) -> (ExecRecord, Origin) {
    let root = argv[1]
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"));
    let record = ExecRecord {
        pid,
        start_time: process::identity(pid).map_or(0, |(start, _)| start),
        start_stamp: identity::start_stamp(pid),
        started_at: started_at.to_owned(),
        stack: stack.name.clone(),
        argv: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        cwd: cwd.to_string_lossy().into_owned(),
        env: env.clone(),
        declared: BTreeMap::new(),
        oyster_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let origin = Origin {
        started_at_utc: started_at.to_owned(),
        repo_root: root.to_string_lossy().into_owned(),
        host_dir: root.join("host-service").to_string_lossy().into_owned(),
        actual_cwd: cwd.to_string_lossy().into_owned(),
        config_dir: env
            .get(launchenv::CONFIG_DIR)
            .cloned()
            .unwrap_or_else(|| stack.config_dir.to_string_lossy().into_owned()),
        host_port: env.get(launchenv::PORT).cloned().unwrap_or_default(),
        host_pid: pid,
        launch_label: stack.label.clone(),
    };
    (record, origin)
}

/// After an exec that failed: the identity files name this pid, which is about to exit
/// without becoming the Host, so they go; the failure is logged and returned.
fn exec_failed(
    stack: &Stack,
    pid: u32,
    node: &Path,
    server: &Path,
    err: &std::io::Error,
    log: &Log,
) -> anyhow::Error {
    if identity::read_pid_file(&stack.pid_path())
        .ok()
        .flatten()
        .and_then(Result::ok)
        == Some(pid)
    {
        let _ = crate::direct::remove_identity(stack);
    }
    log.line(&format!(
        "could not exec {} {}: {err}; its identity files were removed",
        node.display(),
        server.display()
    ));
    anyhow::anyhow!(
        "could not exec {} {}: {err}",
        node.display(),
        server.display()
    )
}

/// Who holds the config lock, when that is why the sync failed (`pid N`, from the holder's
/// record in the lock file).
fn lock_holder(e: &anyhow::Error) -> Option<String> {
    let Some(config::ConfigError::Fs(fsutil::FsError::Busy { holder, .. })) = e.downcast_ref()
    else {
        return None;
    };
    Some(
        holder
            .split(" (")
            .next()
            .filter(|h| h.starts_with("pid "))
            .map_or_else(|| "another process".to_owned(), str::to_owned),
    )
}

/// Why `node server` could not be exec'd, when that can be told beforehand: Node must be an
/// executable regular file, the entry point a regular file.
fn exec_target_problem(node: &Path, server: &Path) -> Result<(), String> {
    crate::provider::resolve::check_executable(node)
        .map_err(|why| format!("the pinned Node {} {why}", node.display()))?;
    match std::fs::metadata(server) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(format!(
            "the Host entry point {} is not a regular file",
            server.display()
        )),
        Err(e) => Err(format!(
            "the Host entry point {} cannot be used: {e}",
            server.display()
        )),
    }
}

/// A variable the plist (or direct startup) must set; without it there is no Host to run.
fn required(env: &BTreeMap<String, String>, key: &str) -> Result<PathBuf, Invalid> {
    let value = env.get(key).filter(|v| !v.is_empty()).ok_or_else(|| {
        Invalid::new(format!(
            "{key} is not set: `oyster host exec` is the Host's launch program, run by launchd \
             from the LaunchAgent or by `oyster host start`, which set it"
        ))
        .hint("start the Host with `oyster agent restart` or `oyster host start`")
    })?;
    let path = PathBuf::from(value);
    if !path.is_absolute() {
        return Err(Invalid::new(format!(
            "{key} is {value:?}, not an absolute path"
        )));
    }
    Ok(path)
}

/// The stack as the plist describes it. The Host's environment has no `OYSTERUN_STACKS_DIR`,
/// but `OYSTERUN_ROUTEC_STACK_ROOT` is `$STACKS/NAME`, so a stack under a custom stacks dir
/// still finds its run and log dirs.
fn launch_stack(ctx: &Context, env: &BTreeMap<String, String>) -> Stack {
    let Some(root) = env.get(launchenv::STACK_ROOT).map(PathBuf::from) else {
        return ctx.stack.clone();
    };
    if ctx.stack.name == DEFAULT_STACK || root == ctx.stack.root {
        return ctx.stack.clone();
    }
    let mut stack_env = ctx.env.stack_env();
    stack_env.stacks_dir = root.parent().map(Path::to_path_buf);
    Stack::new(&ctx.stack.name, &stack_env).unwrap_or_else(|_| ctx.stack.clone())
}

/// The directories Oysterun's runner makes (`ensure_runtime_dirs`).
fn ensure_dirs(stack: &Stack) -> anyhow::Result<()> {
    fsutil::create_dir_all(&stack.config_dir, 0o700)?;
    fsutil::create_dir_all(&stack.run_dir, 0o700)?;
    fsutil::create_dir_all(&stack.log_dir, 0o755)?;
    if let Some(matrix) = stack.matrix_db_path().parent() {
        fsutil::create_dir_all(matrix, 0o700)?;
    }
    Ok(())
}

fn log_changes(log: &Log, changes: &[Change]) {
    for c in changes {
        log.line(&format!("config: {c}"));
    }
}

/// Logs every generated variable whose value in this launch's environment differs.
fn compare_env(
    ctx: &Context,
    stack: &Stack,
    doc: &ConfigDoc,
    env: &BTreeMap<String, String>,
    node: &Path,
    root: &Path,
    log: &Log,
) {
    let port = doc
        .port()
        .or(stack.default_port)
        .or_else(|| env.get(launchenv::PORT).and_then(|p| p.parse().ok()));
    let Some(port) = port else {
        log.line("the environment was not compared with oyster's: the stack has no port");
        return;
    };
    let generated = launchenv::generate(&EnvInputs {
        node_bin: node,
        provider_dirs: &plan::provider_dirs(ctx, doc),
        config_dir: &stack.config_dir,
        port,
        root,
        stack_name: &stack.name,
        stack_root: &stack.root,
    });
    let generated = match generated {
        Ok(g) => g,
        Err(e) => {
            log.line(&format!(
                "oyster cannot generate this stack's environment: {e}"
            ));
            return;
        }
    };
    let diffs: Vec<String> = generated
        .vars
        .iter()
        .filter(|(k, want)| env.get(*k) != Some(want))
        .map(|(k, want)| match env.get(k) {
            Some(got) => format!("{k} is {got:?}, oyster generates {want:?}"),
            None => format!("{k} is unset, oyster generates {want:?}"),
        })
        .collect();
    // Who started this launch, by the variable each manager sets for its jobs (systemd's
    // `INVOCATION_ID`, launchd's `XPC_SERVICE_NAME`).
    let job = match (
        env.contains_key("INVOCATION_ID"),
        env.contains_key("XPC_SERVICE_NAME"),
    ) {
        (true, _) => "systemd unit",
        (false, true) => "LaunchAgent",
        (false, false) => "installed job",
    };
    if !diffs.is_empty() {
        log.line(&format!(
            "this launch's environment differs from what oyster generates for the stack: {}. \
             The Host starts with the environment it was given; `oyster agent regenerate {}` \
             brings the {job} up to date",
            diffs.join("; "),
            stack.name
        ));
    }
}

/// Oysterun's `ensure_stack_dashboard_credentials`: when the installed Oysterun has the entry
/// point, run it as the runner does (`node <script> ensure` in the root, with the stack's
/// config dir, name, origin and proof path); its output goes to the log, redacted.
fn dashboard_credentials(
    ctx: &Context,
    stack: &Stack,
    env: &BTreeMap<String, String>,
    node: &Path,
    root: &Path,
    log: &Log,
) {
    let script = root.join(DASHBOARD_CREDENTIALS_SCRIPT);
    if !script.is_file() {
        return;
    }
    let port = env.get(launchenv::PORT).cloned().unwrap_or_default();
    let mut vars = env.clone();
    vars.entry(launchenv::CONFIG_DIR.to_owned())
        .or_insert_with(|| stack.config_dir.to_string_lossy().into_owned());
    vars.insert("OYSTERUN_STACK_NAME".into(), stack.name.clone());
    vars.insert(
        "OYSTERUN_HOST_ORIGIN".into(),
        format!("http://localhost:{port}"),
    );
    vars.insert(
        "OYSTERUN_STACK_DASHBOARD_CREDENTIALS_PROOF_PATH".into(),
        stack
            .run_dir
            .join("stack_dashboard_credentials.json")
            .to_string_lossy()
            .into_owned(),
    );
    let vars: Vec<(String, String)> = vars.into_iter().collect();
    let outcome = process::Program::new(node)
        .arg(&script)
        .arg("ensure")
        .env(ChildEnv::Exactly(&vars))
        .cwd(root)
        .timeout(DASHBOARD_CREDENTIALS_TIMEOUT)
        .run();
    // It may have written credentials: learn them before any of its output is logged.
    ctx.out
        .add_secrets(config::secret_values_on_disk(&stack.config_path()));
    match outcome {
        Ok(f) => {
            for line in f.stdout.lines().chain(f.stderr.lines()) {
                log.line(&format!("{DASHBOARD_CREDENTIALS_SCRIPT}: {line}"));
            }
            if f.code != 0 {
                log.line(&format!(
                    "{DASHBOARD_CREDENTIALS_SCRIPT} exited {}; the Host starts anyway",
                    f.code
                ));
            }
        }
        Err(e) => log.line(&format!("{e}; the Host starts anyway")),
    }
}

/// Oysterun's `ensure_routec_web_chat_static_app`, the check only: a release carries the
/// built app, a checkout builds it with npm, which a launch program does not do.
fn check_web_chat(root: &Path, log: &Log) {
    let dir = root.join(WEB_CHAT_DIR);
    if !dir.is_dir() || dir.join("dist/index.html").is_file() {
        return;
    }
    if dir.join(WEB_CHAT_MARKER).is_file() {
        log.line(&format!(
            "{} says the web-chat app is prebuilt, but dist/index.html is missing; reinstall Oysterun",
            dir.join(WEB_CHAT_MARKER).display()
        ));
    } else {
        log.line(&format!(
            "the web-chat app in {} is not built (no dist/index.html); oyster does not build it \
             at launch: run `npm run build` there",
            dir.display()
        ));
    }
}

/// Writes the exec record, the origin file and, last, the pid file (whoever sees the new pid
/// finds the rest). A pid file naming another live Host of this stack is left alone.
fn write_identity(stack: &Stack, record: &ExecRecord, origin: &Origin) -> anyhow::Result<()> {
    if let Ok(Some(Ok(other))) = identity::read_pid_file(&stack.pid_path()) {
        if other != record.pid && live_host(stack, other) {
            anyhow::bail!(
                "{} names another live Host (pid {other}); its identity files were left alone",
                stack.pid_path().display()
            );
        }
    }
    fsutil::create_dir_all(&stack.run_dir, 0o700)?;
    identity::replace(&stack.exec_record_path(), &record.to_bytes(), 0o600)?;
    identity::replace(&stack.origin_path(), origin.render().as_bytes(), 0o644)?;
    identity::replace(
        &stack.pid_path(),
        identity::pid_file_text(record.pid).as_bytes(),
        0o644,
    )?;
    Ok(())
}

/// Whether `pid` is the Host the exec record describes: same start time, running its server.
pub fn live_host(stack: &Stack, pid: u32) -> bool {
    let Some(rec) = ExecRecord::read(&stack.exec_record_path()) else {
        return false;
    };
    let Some((start, cmd)) = process::identity(pid) else {
        return false;
    };
    rec.describes(pid, start)
        && rec
            .server()
            .is_some_and(|s| cmd.iter().any(|a| Path::new(a) == s))
}
