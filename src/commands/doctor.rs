//! `oyster doctor [--json] [--probe]`: one row per check with ok/warn/fail and the fix.
//!
//! Doctor only reads. It keeps "the command is available" apart from "the provider is
//! authenticated": discovery never authenticates, so authentication stays `not_checked`.
//! `--probe` is the one place a provider is executed, and then only `--version`.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::agent::launchctl::Launchctl;
use crate::agent::plist as agentplist;
use crate::commands::providers::{redacted, row, ProviderRow};
use crate::commands::{print_json, Ctx};
use crate::config::ConfigDoc;
use crate::host::plan::{self, Writes};
use crate::provider::registry::{Provider, PROVIDERS};
use crate::provider::resolve::Intent;
use crate::sys::process::{self, ChildEnv};
use crate::verify;
use crate::ExitStatus;

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

#[derive(Serialize)]
struct ProviderReport {
    #[serde(flatten)]
    row: ProviderRow,
    installer: &'static str,
    probe: Option<String>,
}

#[derive(Serialize)]
struct Report {
    checks: Vec<Check>,
    providers: Vec<ProviderReport>,
}

fn check(name: &str, status: Level, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check {
        check: name.to_owned(),
        status,
        detail: detail.into(),
        fix,
    }
}

pub fn run(ctx: &Ctx, json: bool, probe: bool) -> anyhow::Result<ExitStatus> {
    let st = &ctx.stack;
    let home = &st.home;
    let tilde = |s: &str| crate::output::redact::tilde_text(home, s);
    let mut checks = vec![];
    if st.config_dir_overridden {
        checks.push(check(
            "config dir",
            Level::Warn,
            format!("OYSTERUN_CONFIG_DIR is set: {}", st.tilde(&st.config_dir)),
            None,
        ));
    }
    let doc = match ConfigDoc::load(&st.config_path()) {
        Ok(doc) => {
            let what = if doc.exists() {
                "valid"
            } else {
                "does not exist yet"
            };
            checks.push(check(
                "config",
                Level::Ok,
                format!("{} {what}", st.tilde(&st.config_path())),
                None,
            ));
            doc
        }
        Err(e) => {
            checks.push(check(
                "config",
                Level::Fail,
                tilde(&e.to_string()),
                Some("fix or restore the file".into()),
            ));
            return finish(json, checks, vec![]);
        }
    };

    // Node, root and the generated plist, all read-only.
    let plan = plan::plan(ctx, &Default::default(), Writes::None);
    match &plan {
        Ok(p) => checks.push(check("node", Level::Ok, format!("{} {} (from {})", st.tilde(&p.node.path), p.node.version, p.node.origin), None)),
        Err(e) => checks.push(check(
            "node/root",
            Level::Fail,
            tilde(&format!("{e:#}")),
            Some("pass --node-bin/--root to `oyster agent regenerate`, or set OYSTERUN_NODE_BIN/OYSTERUN_ROOT".into()),
        )),
    }

    // Providers.
    let mut providers = vec![];
    for p in PROVIDERS {
        let r = redacted(home, row(ctx, &doc, p));
        let resolved = doc.resolve(p, &ctx.search).resolved;
        let installer = resolved
            .as_deref()
            .map_or("unknown", |path| installer_of(home, p, path));
        let (level, fix) = match (doc.intent(p), &resolved) {
            (Intent::Disabled, _) => (Level::Ok, None),
            (_, Some(_)) => (Level::Ok, None),
            (Intent::Manual, None) => (Level::Fail, Some(format!("`oyster providers set {} /full/path` or `oyster providers auto {}`", p.id, p.id))),
            (Intent::Auto, None) => (Level::Warn, Some(format!("install it (`oyster setup --install-providers`) or `oyster providers set {} /full/path`", p.id))),
        };
        let mut detail = format!(
            "{} ({}), {}{}",
            r.state,
            r.intent.as_str(),
            r.resolved
                .clone()
                .or_else(|| r.reason.clone())
                .unwrap_or_default(),
            r.source.map_or(String::new(), |s| format!(
                ", source {}",
                crate::commands::providers::source_name(s)
            ))
        );
        if resolved.is_some() {
            detail.push_str(&format!(", installed by {installer}"));
        }
        let mut report = ProviderReport {
            row: r,
            installer,
            probe: None,
        };
        if probe {
            if let (Some(path), Ok(plan)) = (&resolved, &plan) {
                let (lvl, said) = probe_version(ctx, plan, p, path);
                if lvl == Level::Fail {
                    report.row.state = "unavailable";
                }
                checks.push(check(
                    &format!("{} --version", p.id),
                    lvl,
                    said.clone(),
                    (lvl != Level::Ok).then(|| {
                        format!("check that {} really is {}", st.tilde(path), p.display_name)
                    }),
                ));
                report.probe = Some(said);
            }
        }
        checks.push(check(&format!("provider {}", p.id), level, detail, fix));
        providers.push(report);
    }

    // The plist against the generator.
    let plist_path = st.plist_path();
    let installed = agentplist::read_installed(&plist_path);
    match (&installed, &plan) {
        (None, _) => checks.push(check(
            "plist",
            Level::Warn,
            format!("{} is not installed", st.tilde(&plist_path)),
            Some(format!("`oyster agent install --stack {}`", st.name)),
        )),
        (Some(_), Ok(p)) if !p.plist_changed() => checks.push(check(
            "plist",
            Level::Ok,
            format!("{} matches the generator", st.tilde(&plist_path)),
            None,
        )),
        (Some(i), Ok(p)) => {
            let old = String::from_utf8_lossy(&i.bytes).into_owned();
            let new = String::from_utf8_lossy(&p.plist).into_owned();
            let diff = similar::TextDiff::from_lines(&old, &new);
            let changed: Vec<String> = diff
                .iter_all_changes()
                .filter(|c| c.tag() != similar::ChangeTag::Equal)
                .map(|c| {
                    format!(
                        "{}{}",
                        if c.tag() == similar::ChangeTag::Insert {
                            "+"
                        } else {
                            "-"
                        },
                        c.value().trim()
                    )
                })
                .collect();
            checks.push(check(
                "plist",
                Level::Warn,
                tilde(&format!(
                    "{} differs from the generator: {}",
                    st.tilde(&plist_path),
                    changed.join(" ")
                )),
                Some(format!("`oyster agent regenerate --stack {}`", st.name)),
            ));
        }
        (Some(_), Err(_)) => checks.push(check(
            "plist",
            Level::Warn,
            "cannot compare: the generator failed (see node/root)",
            None,
        )),
    }

    // launchd and the live Host.
    match Launchctl::locate() {
        Err(e) => checks.push(check("launchd", Level::Warn, e.to_string(), None)),
        Ok(lc) => {
            if lc.overridden {
                checks.push(check(
                    "launchctl",
                    Level::Warn,
                    format!("OYSTER_LAUNCHCTL override in effect: {}", lc.describe()),
                    Some("unset OYSTER_LAUNCHCTL to use /bin/launchctl".into()),
                ));
            }
            let domain = lc.domain()?;
            if let Some(n) = &domain.fallback_note {
                checks.push(check("domain", Level::Warn, n.clone(), None));
            }
            match lc.print(&domain.target(&st.label))? {
                None => checks.push(check(
                    "launchd",
                    Level::Warn,
                    format!("{} is not loaded in {}", st.label, domain.name),
                    installed
                        .as_ref()
                        .map(|_| format!("`oyster agent restart --stack {}`", st.name)),
                )),
                Some(info) => {
                    let running = info.running();
                    checks.push(check(
                        "launchd",
                        if running { Level::Ok } else { Level::Fail },
                        format!(
                            "{} in {}: state = {}, last exit code = {}",
                            st.label,
                            domain.name,
                            info.state().unwrap_or("?"),
                            info.last_exit_code().unwrap_or("?")
                        ),
                        (!running).then(|| {
                            format!(
                                "see {} and run `oyster agent restart --stack {}`",
                                st.tilde(&st.log_path()),
                                st.name
                            )
                        }),
                    ));
                    if let (Some(pid), Some(inst)) = (info.pid().filter(|_| running), &installed) {
                        let live = verify::check_live(pid, &inst.env);
                        let ok = live.verified();
                        checks.push(check(
                            "live host",
                            if ok { Level::Ok } else { Level::Fail },
                            format!("pid {pid}: {}", live.describe()),
                            (!ok).then(|| format!("`oyster agent restart --stack {}`", st.name)),
                        ));
                    }
                }
            }
        }
    }

    // The log directory.
    let log_dir = &st.log_dir;
    let probe_dir = if log_dir.exists() {
        log_dir.as_path()
    } else {
        log_dir
            .ancestors()
            .find(|a| a.exists())
            .unwrap_or(Path::new("/"))
    };
    let writable = writable(probe_dir);
    checks.push(check(
        "log dir",
        if writable { Level::Ok } else { Level::Fail },
        format!(
            "{} {}",
            st.tilde(log_dir),
            if writable {
                "is writable"
            } else {
                "is not writable"
            }
        ),
        (!writable).then(|| {
            format!(
                "make {} writable by this user (launchd exits 78 when it cannot open the log)",
                st.tilde(log_dir)
            )
        }),
    ));
    finish(json, checks, providers)
}

fn finish(
    json: bool,
    checks: Vec<Check>,
    providers: Vec<ProviderReport>,
) -> anyhow::Result<ExitStatus> {
    let failed = checks.iter().any(|c| c.status == Level::Fail);
    if json {
        print_json(&Report { checks, providers })?;
    } else {
        for c in &checks {
            let tag = match c.status {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            println!("[{tag}] {}: {}", c.check, c.detail);
            if let Some(fix) = &c.fix {
                println!("       fix: {fix}");
            }
        }
        println!("authentication: not checked (discovery never runs a provider's login)");
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a valid C string for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
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
fn probe_version(ctx: &Ctx, plan: &plan::Plan, p: &Provider, path: &Path) -> (Level, String) {
    let mut env = crate::direct::base_env(&ctx.stack.home);
    env.extend(plan.env.pairs());
    match process::run(
        path,
        &["--version"],
        ChildEnv::Exactly(&env),
        Duration::from_secs(5),
    ) {
        Err(e) => (
            Level::Fail,
            crate::output::redact::tilde_text(&ctx.stack.home, &e.to_string()),
        ),
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
