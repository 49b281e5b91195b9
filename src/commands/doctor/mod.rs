//! `oyster doctor [--json] [--probe]`: one row per check with ok/warn/fail and the fix.
//!
//! Doctor only reads. Each check is one function returning its rows; a check that cannot run
//! (a corrupt config, launchctl failing) is a failed row and the others still run, so the
//! document is printed exactly when it is needed most. It keeps "the command is available"
//! apart from "the provider is authenticated": discovery never authenticates. `--probe` is the
//! one place a provider is executed, and then only `--version`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::config::ConfigDoc;
use crate::context::Context;
use crate::host::plan::{self as plan, Plan};
use crate::host::plist::{self as agentplist, Installed};
use crate::output::Tone;
use crate::provider::registry::{Provider, PROVIDERS};
use crate::provider::resolve::Intent;
use crate::provider::status::{ProviderStatus, State};
use crate::sys::process::{self, ChildEnv};
use crate::ExitStatus;

mod all;
mod declared;
mod files;
mod host;
mod launchd;
mod network;
mod service;
mod systemd;

pub use all::run_all;

use files::log_dir_check;

#[derive(Debug, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub check: String,
    pub status: Level,
    pub detail: String,
    pub fix: Option<String>,
}

fn check(name: &str, status: Level, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check {
        check: name.to_owned(),
        status,
        detail: detail.into(),
        fix,
    }
}

#[derive(Serialize)]
struct ProviderReport {
    #[serde(flatten)]
    status: ProviderStatus,
    installer: Option<&'static str>,
    probe: Option<String>,
}

#[derive(Serialize)]
struct Report {
    ok: bool,
    stack: String,
    port: Option<u16>,
    /// Whether anybody can log in to the Host; `null` when the stack has no config yet.
    host_login: Option<crate::config::login::HostLogin>,
    checks: Vec<Check>,
    providers: Vec<ProviderReport>,
    /// The full environment the Host gets (the generated variables plus launchd's base).
    environment: Option<BTreeMap<String, String>>,
    /// The declared variables the launch program adds (`oyster env`): names only.
    declared: Vec<String>,
}

pub fn run(ctx: &Context, probe: bool) -> anyhow::Result<ExitStatus> {
    // A typo is refused with the nearest name, as every other verb refuses it (exit 2).
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    let report = report(ctx, probe);
    ctx.out.show(&report, || print(ctx, &report));
    Ok(if report.ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// An `OYSTERUN_CONFIG_DIR` in effect, said.
fn config_dir_check(ctx: &Context) -> Option<Check> {
    let st = &ctx.stack;
    st.config_dir_overridden.then(|| {
        check(
            "config dir",
            Level::Warn,
            format!("OYSTERUN_CONFIG_DIR is set: {}", st.config_dir.display()),
            None,
        )
    })
}

/// Every check of the context's stack; reads only, prints nothing.
fn report(ctx: &Context, probe: bool) -> Report {
    let st = &ctx.stack;
    let mut checks: Vec<Check> = config_dir_check(ctx).into_iter().collect();
    checks.extend(managed_check(ctx));
    // Resolved as every command resolves it: with the organization's forced values.
    let doc = config_check(ctx, &mut checks).map(|d| plan::managed(ctx).applied(d));
    let plan = doc.as_ref().map(|_| plan::plan(ctx, &Default::default()));
    checks.push(node_check(&plan, &ctx.hints()));
    let login = host::login_check(ctx, doc.as_ref()).map(|(state, row)| {
        checks.push(row);
        state
    });
    let mut providers = vec![];
    if let Some(doc) = &doc {
        for p in PROVIDERS {
            providers.push(provider_check(
                ctx,
                doc,
                p,
                plan_ok(&plan),
                probe,
                &mut checks,
            ));
        }
    }
    let installed = agentplist::read_installed(&st.plist_path(), ctx.reporter());
    let systemd = match ctx.manager() {
        Ok(crate::context::Manager::Systemd(sc)) => Some(sc),
        _ => None,
    };
    let (rows, manager_pids) =
        service::manager_checks(ctx, systemd.as_deref(), installed.as_ref(), plan_ok(&plan));
    checks.extend(rows);
    // By the one rule when the plan cannot be made (no root found).
    let port = plan_ok(&plan).map(|p| p.port).or_else(|| {
        crate::host::plan::HostInputs::default()
            .effective_port(st, doc.as_ref(), installed.as_ref())
            .map(|p| p.port)
    });
    checks.extend(host::port_check(ctx, port, manager_pids));
    checks.push(log_dir_check(ctx));
    let unit_here = crate::unit::unreachable(ctx).is_some();
    if let (None, false, Err(e)) = (&systemd, unit_here, st.refuse_unwritable_agents_dir()) {
        let msg = e.why().to_owned();
        checks.push(check("LaunchAgents dir", Level::Fail, msg, e.hint));
    }
    // Every verb that writes takes the stack's lock there first.
    if let Err(e) = st.refuse_unusable_lock_dir() {
        let msg = e.why().to_owned();
        checks.push(check("lock dir", Level::Fail, msg, e.hint));
    }
    checks.extend(privacy_check(ctx, plan_ok(&plan)));
    checks.extend(network::local_network_check(ctx, doc.as_ref()));
    let (declared_checks, declared) = declared::declared_checks(ctx);
    checks.extend(declared_checks);
    // A FIFO or symlink where launchd opens the Host log (docs/behaviour.md §9); a log
    // directory that is not one is the log dir check's failure, said once.
    let dir_ok = st.refuse_bad_log_dir().is_ok();
    if let Some(e) = dir_ok.then(|| st.refuse_special_log().err()).flatten() {
        checks.push(check("host log", Level::Fail, e.msg, e.hint));
    }
    let environment = plan_ok(&plan)
        .and_then(|p| p.host_environment(&st.home).ok())
        .map(|v| v.into_iter().collect());
    Report {
        ok: !checks.iter().any(|c| c.status == Level::Fail),
        stack: st.name.clone(),
        port,
        host_login: login,
        checks,
        providers,
        environment,
        declared,
    }
}

/// Paths the Host needs that lie in a folder macOS's privacy protection keeps launchd-run
/// programs from reading (one warning each, with the setting to change).
/// What the organization's profile forces (docs/fleet.md): one check, only when it forces
/// anything or leaves something out.
fn managed_check(ctx: &Context) -> Option<Check> {
    let managed = plan::managed(ctx);
    if managed.entries.is_empty() && managed.environment.is_empty() && managed.warnings.is_empty() {
        return None;
    }
    // A forced variable by name: its value is a secret.
    let forced: Vec<String> = managed
        .entries
        .iter()
        .map(|e| format!("{} = {} ({})", e.key, e.value, e.file.display()))
        .chain(
            managed
                .environment
                .iter()
                .map(|f| format!("environment {} ({})", f.name, f.file.display())),
        )
        .collect();
    let (level, fix) = if managed.warnings.is_empty() {
        (Level::Ok, None)
    } else {
        (
            Level::Warn,
            Some(format!(
                "ask your administrator to correct the profile: {}",
                managed
                    .warnings
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        )
    };
    Some(check(
        "managed preferences",
        level,
        format!("forced by your organization: {}", forced.join(", ")),
        fix,
    ))
}

fn privacy_check(ctx: &Context, plan: Option<&Plan>) -> Vec<Check> {
    let Some(plan) = plan else { return vec![] };
    let node = plan.node.path.as_path();
    // Two signatures read: once for every row.
    let grant = (!plan.privacy.is_empty()).then(|| crate::host::privacy::grant(node).to_string());
    let mut checks: Vec<Check> = plan
        .privacy
        .iter()
        .map(|w| {
            check(
                "privacy",
                Level::Warn,
                w.clone(),
                Some(format!(
                    "move it out of the protected folder (the lasting fix). {}",
                    grant.as_deref().unwrap_or_default()
                )),
            )
        })
        .collect();
    // A grant is given to one Node binary: an upgrade since the last verified start loses it.
    if !plan.privacy.is_empty() {
        if let Some(changed) = crate::host::privacy::node_changed(&ctx.stack.run_dir, node) {
            checks.push(check(
                "privacy",
                Level::Warn,
                changed.to_string(),
                Some(format!(
                    "add {} under Full Disk Access, or move the paths out of the protected folder",
                    crate::host::privacy::resolved(node).display()
                )),
            ));
        }
    }
    checks
}

fn plan_ok(plan: &Option<anyhow::Result<Plan>>) -> Option<&Plan> {
    plan.as_ref().and_then(|p| p.as_ref().ok())
}

fn print(ctx: &Context, report: &Report) {
    for c in &report.checks {
        let (tag, tone) = match c.status {
            Level::Ok => ("ok  ", Tone::Ok),
            Level::Warn => ("warn", Tone::Warn),
            Level::Fail => ("FAIL", Tone::Fail),
        };
        ctx.out
            .out_toned(tone, &format!("[{tag}] {}: {}", c.check, c.detail));
        if let Some(fix) = &c.fix {
            ctx.out.out_toned(Tone::Dim, &format!("       fix: {fix}"));
        }
    }
    ctx.out
        .out("authentication: not checked (discovery never runs a provider's login)");
}

/// The config parses; one holding secrets is not readable by others.
fn config_check(ctx: &Context, checks: &mut Vec<Check>) -> Option<ConfigDoc> {
    let path = ctx.stack.config_path();
    match ConfigDoc::load(&path) {
        Ok(doc) => {
            let what = if doc.exists() {
                "valid"
            } else {
                "does not exist yet"
            };
            checks.push(check(
                "config",
                Level::Ok,
                format!("{} {what}", path.display()),
                None,
            ));
            let secrets = crate::output::redact::secret_values(&serde_json::Value::Object(
                doc.value().clone(),
            ));
            let mode = std::fs::metadata(&path).map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o777
            });
            if let (false, Ok(mode)) = (secrets.is_empty(), mode) {
                if mode & 0o077 != 0 {
                    checks.push(check(
                        "config mode",
                        Level::Warn,
                        format!(
                            "{} holds secrets and is readable by others (mode {mode:04o})",
                            path.display()
                        ),
                        Some(format!("chmod 600 {}", path.display())),
                    ));
                }
            }
            Some(doc)
        }
        Err(e) => {
            checks.push(check(
                "config",
                Level::Fail,
                e.to_string(),
                Some("correct the value it names, or restore the file; the other checks ran without it".into()),
            ));
            None
        }
    }
}

/// Node, root and the generator, read-only.
fn node_check(plan: &Option<anyhow::Result<Plan>>, h: &crate::context::Hints) -> Check {
    match plan {
        None => check(
            "node/root",
            Level::Warn,
            "not checked: the config is not usable",
            None,
        ),
        Some(Ok(p)) => check(
            "node",
            Level::Ok,
            format!(
                "{} {} (from {})",
                p.node.path.display(),
                p.node.version,
                p.node.origin
            ),
            None,
        ),
        // A newcomer's first doctor: no Oysterun yet, so say how to get it and set it up.
        Some(Err(e)) if format!("{e:#}").contains("could not find the Oysterun install root") => {
            check(
                "node/root",
                Level::Fail,
                format!("{e:#}"),
                Some(format!(
                "install Oysterun (`npm install -g oysterun`), then run `{}`; for a checkout, `{}`",
                h.cmd("setup"),
                h.cmd("setup --root DIR")
            )),
            )
        }
        // A forced Node or root that does not work: the fix is the administrator's (a flag
        // or variable naming another would be refused).
        Some(Err(e))
            if e.downcast_ref::<crate::error::Failed>().is_some_and(|f| {
                f.msg.contains("the managed node_bin") || f.msg.contains("the managed root")
            }) =>
        {
            let f = e.downcast_ref::<crate::error::Failed>();
            check(
                "node/root",
                Level::Fail,
                format!("{e:#}"),
                f.and_then(|f| f.hint.clone()),
            )
        }
        Some(Err(e)) => check(
            "node/root",
            Level::Fail,
            format!("{e:#}"),
            Some(format!(
                "pass --node-bin/--root to `{}`, or set OYSTERUN_NODE_BIN/OYSTERUN_ROOT",
                h.agent("regenerate")
            )),
        ),
    }
}

/// One provider: its state, who installed it, and with `--probe` its `--version` banner.
fn provider_check(
    ctx: &Context,
    doc: &ConfigDoc,
    p: &'static Provider,
    plan: Option<&Plan>,
    probe: bool,
    checks: &mut Vec<Check>,
) -> ProviderReport {
    let mut status = crate::commands::providers::status(ctx, doc, p);
    status.managed = (crate::host::plan::managed(ctx)
        .provider(p.id.as_str())
        .first())
    .map(|e| e.file.to_string_lossy().into_owned());
    let installer = status
        .resolved
        .as_deref()
        .map(|path| installer_of(&ctx.stack.home, p, Path::new(path)))
        // Unknown is `null` in a document, never the word (docs/behaviour.md §10).
        .filter(|i| *i != "unknown");
    let forced = forced_by_organization(ctx, p);
    let (level, fix) = provider_fix(ctx, p, &status, forced.as_ref());
    let detail = provider_detail(&status, forced.is_some(), installer);
    let mut report = ProviderReport {
        status,
        installer,
        probe: None,
    };
    if let (true, Some(path), Some(plan)) = (probe, report.status.resolved.clone(), plan) {
        let path = Path::new(&path);
        let (lvl, said) = probe_version(ctx, plan, p, path);
        if lvl == Level::Fail {
            report.status.state = State::Unavailable;
        }
        checks.push(check(
            &format!("{} --version", p.id),
            lvl,
            said.clone(),
            (lvl != Level::Ok)
                .then(|| format!("check that {} really is {}", path.display(), p.display_name)),
        ));
        report.probe = Some(said);
    }
    checks.push(check(&format!("provider {}", p.id), level, detail, fix));
    report
}

/// Why the provider's setting cannot be changed here, when a managed preference forces it.
fn forced_by_organization(ctx: &Context, p: &Provider) -> Option<String> {
    let managed = crate::host::plan::managed(ctx);
    managed.provider(p.id.as_str()).first().map(|e| {
        format!(
            "{} is forced by your organization ({}): ask your administrator to change it",
            e.key,
            e.file.display()
        )
    })
}

/// The provider's row level, and the fix of a provider that is wanted and not available.
fn provider_fix(
    ctx: &Context,
    p: &Provider,
    status: &ProviderStatus,
    forced: Option<&String>,
) -> (Level, Option<String>) {
    // Each fix is for this stack: run as shown, it must not change production's config.
    let h = ctx.hints();
    match (status.intent, status.state) {
        (Intent::Disabled, _) | (_, State::Available) => (Level::Ok, None),
        // `providers set`/`auto` would be refused: the fix is the administrator's.
        (Intent::Manual, _) if forced.is_some() => (Level::Fail, forced.cloned()),
        (Intent::Manual, _) => (
            Level::Fail,
            Some(format!(
                "`{}` or `{}`",
                h.flag_cmd(&format!("providers set {} /full/path", p.id)),
                h.flag_cmd(&format!("providers auto {}", p.id))
            )),
        ),
        (Intent::Auto, _) => (
            Level::Warn,
            Some(format!(
                "install it (`{setup}`), point oyster at it with `{set}`, or, if you do not use {name}, disable it with `{off}`",
                setup = h.cmd("setup --install-providers"),
                set = h.flag_cmd(&format!("providers set {} /full/path", p.id)),
                off = h.flag_cmd(&format!("providers set {} \"\"", p.id)),
                name = p.display_name
            )),
        ),
    }
}

/// The provider row's detail: its state and intent with the path or why not, where its path
/// came from, and who installed it.
fn provider_detail(
    status: &ProviderStatus,
    forced: bool,
    installer: Option<&'static str>,
) -> String {
    // The reason's fix is what `fix:` says; the detail keeps the why.
    let why = match (&status.resolved, &status.unresolved) {
        (Some(path), _) => path.clone(),
        (None, Some(u)) => u.why(),
        (None, None) => String::new(),
    };
    let mut detail = match status.state {
        State::Disabled if forced => "disabled by your organization".to_owned(),
        State::Disabled => "disabled by the user".to_owned(),
        _ => format!("{} ({}), {why}", status.state, status.intent),
    };
    if let Some(source) = &status.source {
        detail.push_str(&format!(", source {}", source.as_str()));
    }
    if let Some(by) = installer {
        detail.push_str(&format!(", installed by {by}"));
    }
    detail
}

/// Which installer owns a command, proven from its path (symlinks followed) only.
pub fn installer_of(home: &Path, p: &Provider, path: &Path) -> &'static str {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let r = real.to_string_lossy();
    if r.contains("/Cellar/") || r.contains("/Caskroom/") {
        "homebrew"
    } else if r.contains("/.volta/") {
        "volta"
    } else if r.contains("/mise/installs/") {
        "mise"
    } else if r.contains("/lib/node_modules/") {
        "npm"
    } else if p.native_dirs.iter().any(|d| real.starts_with(home.join(d))) {
        "native"
    } else {
        "unknown"
    }
}

/// Runs `<command> --version` only: no shell, the generated environment, a timeout, output
/// capped; a banner that does not match the registry's pattern means "not that provider".
fn probe_version(ctx: &Context, plan: &Plan, p: &Provider, path: &Path) -> (Level, String) {
    let env = match plan.host_environment(&ctx.stack.home) {
        Ok(env) => env,
        Err(e) => return (Level::Fail, format!("{e:#}")),
    };
    match process::Program::new(path)
        .arg("--version")
        .env(ChildEnv::Exactly(&env))
        .timeout(Duration::from_secs(5))
        .run()
    {
        Err(e) => (Level::Fail, e.to_string()),
        Ok(out) => {
            let first: String = out
                .stdout
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            let re = regex_lite::Regex::new(p.version_pattern).expect("registry patterns compile");
            if out.code == 0 && re.is_match(first.trim()) {
                (
                    Level::Ok,
                    format!("{} reports {}", p.display_name, first.trim()),
                )
            } else {
                (
                    Level::Fail,
                    format!(
                        "not {}: `--version` exited {} and printed {:?}",
                        p.display_name,
                        out.code,
                        first.trim()
                    ),
                )
            }
        }
    }
}
