//! Setup's side effects, each journaled before it is taken, and how each is taken back: by the
//! run that took it (a failure, an interrupt), or by the next setup, from the receipt a run
//! killed outright left (`receipt.rs`). A step keeps in memory what its own rollback needs (a
//! file's exact previous bytes) and writes to the receipt only what holds no secret.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::created::Created;
use crate::context::Context;
use crate::direct;
use crate::host::plan::Plan;
use crate::output::redact;
use crate::provider::registry::PROVIDERS;
use crate::sys::fs::{self as fsutil, Lock};
use crate::sys::process::{self, ChildEnv};

/// One side effect and how to take it back.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Undo {
    /// The stack directory this setup created (none was there): removed whole, and the stacks
    /// directory above it (`above`) when this setup created that too and it is empty.
    Stack {
        root: PathBuf,
        above: Option<PathBuf>,
    },
    /// Files and directories that did not exist before setup applied anything; removed last
    /// (directories only while empty, so nothing a user put there is lost).
    Created(Created),
    /// A provider npm installs (`npm uninstall -g --prefix PREFIX PACKAGE`), and the npm
    /// that installs it once it runs: one a run killed outright left running is stopped
    /// before the uninstall (it would otherwise finish the install after it).
    NpmUninstall {
        npm: PathBuf,
        prefix: PathBuf,
        package: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        running: Option<Running>,
    },
    /// A file setup writes: config.json, or the job's definition (`--no-start`).
    File {
        path: PathBuf,
        mode: Option<u32>,
        /// What the receipt says the file held (no secret).
        before: Before,
        /// The file as this setup left it (`None`: not written yet, or a run before stamps):
        /// the next setup tells by it whether the user changed the file since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        written: Option<Stamp>,
        /// In memory only: the exact previous bytes (`Some(None)`: it did not exist).
        #[serde(skip)]
        bytes: Option<Option<Vec<u8>>>,
    },
    AgentFolder(PathBuf),
    /// The Host started directly (a pid file).
    StopHost,
    /// That start verified, its pid file written: the receipt is written again after it, so
    /// a pid file newer than the receipt is a Host started since (`host start`), not this one.
    HostStarted,
    /// The job under the service manager, installed (`first`: where none was) or changed:
    /// journaled for a setup killed outright, whose next run uninstalls a first job, or puts a
    /// changed one back on the config it restored.
    Service {
        first: bool,
    },
}

/// A child setup started, as the kernel knows it: its pid (its process group's, the process
/// door gives each child its own) and start time, so a pid used again since is never taken
/// for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Running {
    pub(super) pid: u32,
    pub(super) started: u64,
}

impl Running {
    /// The child `pid` as it runs now (`None`: gone already).
    pub(super) fn of(pid: u32) -> Option<Running> {
        let (started, _) = process::identity(pid)?;
        Some(Running { pid, started })
    }

    /// Stops the child's process group if it is still the npm running `argv` (an npm a killed
    /// run left): SIGTERM to the group, then SIGKILL to what is left of the group after 10 s;
    /// waits for the group to be gone. `true` if one was stopped. Nothing is signalled unless
    /// the pid still has its start time, runs that install, and leads its own group.
    fn stop(self, argv: &[String]) -> bool {
        use crate::sys::signal::{group_exists, killpg, leads_group, Signal};
        let live = process::identity(self.pid)
            .is_some_and(|(started, cmd)| started == self.started && runs(&cmd, argv));
        if self.pid <= 1 || !live || !leads_group(self.pid) {
            return false;
        }
        // The group, not only its leader: npm's children (a lifecycle script) are in it, and
        // one that outlives npm would finish the install after the uninstall. While any
        // process is in it, no new process can be given its number.
        for (sig, wait) in [(Signal::SIGTERM, 100), (Signal::SIGKILL, 50)] {
            let _ = killpg(self.pid, sig);
            for _ in 0..wait {
                if !group_exists(self.pid) {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        true
    }
}

/// Whether a command line `cmd` (as the kernel shows it) is npm running `argv` (`install -g
/// --prefix PREFIX PACKAGE`): as it was started (`[node] npm …argv`), or as npm shows itself
/// once it runs: it sets its process title to `npm` and its positional arguments
/// (`npm install PACKAGE`), written over its arguments, one string.
fn runs(cmd: &[String], argv: &[String]) -> bool {
    let positional: Vec<&str> = match argv {
        [verb, _g, _prefix_flag, _prefix, package] => vec!["npm", verb, package],
        _ => return cmd.ends_with(argv),
    };
    cmd.ends_with(argv) || cmd.join(" ").trim() == positional.join(" ")
}

/// Which file a path held when setup wrote it, without its content: device, inode, size and
/// modification time (an atomic write makes a new inode, an edit in place a new mtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl Stamp {
    /// The stamp of what `path` is now (`None`: nothing there).
    pub(super) fn of(path: &std::path::Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        })
    }
}

/// What a file held before setup wrote it, as a receipt may keep it: never a secret.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Before {
    /// It did not exist: taking it back removes it.
    Absent,
    /// These bytes, which hold no secret.
    Text(String),
    /// A JSON object whose top-level keys are these, in this order, each with its value, or
    /// `None` where the value holds a secret (taken back as the file holds it then).
    Keys(Vec<(String, Option<Value>)>),
    /// Written again from what the config holds once the rest is taken back (the definition).
    Generated,
    /// Nothing a revert could use (a file that did not parse, which setup does not write).
    Unknown,
}

impl Before {
    /// config.json's previous bytes, as a receipt may keep them.
    pub(super) fn of_config(bytes: Option<&[u8]>) -> Before {
        let Some(bytes) = bytes else {
            return Before::Absent;
        };
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(bytes) else {
            return Before::Unknown;
        };
        let secret = |v: &Value| {
            let text = v.to_string();
            !redact::secret_values(v).is_empty()
                || redact::redact_shapes(&redact::redact_urls(&text)) != text
        };
        match std::str::from_utf8(bytes) {
            Ok(text) if !secret(&Value::Object(map.clone())) => Before::Text(text.to_owned()),
            _ => Before::Keys(
                map.into_iter()
                    .map(|(k, v)| {
                        let one = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
                        let kept = (!secret(&one)).then_some(v);
                        (k, kept)
                    })
                    .collect(),
            ),
        }
    }
}

/// What setup's steps need to take themselves back.
pub(super) struct Undoing<'a> {
    pub(super) ctx: &'a Context,
    /// The Host plan npm's environment comes from.
    pub(super) plan: &'a Plan,
    pub(super) lock: &'a Lock,
    /// A definition to write again once everything else is taken back (a receipt's).
    pub(super) regenerate: Option<PathBuf>,
    /// Whether the job is to be put back on the config once everything else is taken back.
    pub(super) reapply: bool,
}

impl crate::undo::Revert<Undoing<'_>> for Undo {
    fn revert(self, cx: &mut Undoing<'_>) -> anyhow::Result<Option<String>> {
        let ctx = cx.ctx;
        Ok(Some(match self {
            Undo::Stack { root, above } => {
                if std::fs::remove_dir_all(&root).is_err() {
                    return Ok(None);
                }
                // The stacks directory too, when this setup created it and it is empty.
                if let Some(dir) = above {
                    let _ = std::fs::remove_dir(dir);
                }
                format!(
                    "removed the stack directory {} it had created",
                    root.display()
                )
            }
            Undo::Created(created) => match created.remove(&ctx.stack.home) {
                0 => return Ok(None),
                removed => super::Said::RemovedCreated { removed }.to_string(),
            },
            Undo::StopHost => match direct::stop(&ctx.stack, &ctx.hints(), ctx.reporter())? {
                direct::Stopped::NotRunning => return Ok(None),
                _ => "stopped the Host it started".to_owned(),
            },
            Undo::HostStarted => return Ok(None),
            Undo::Service { first: false } => {
                cx.reapply = true;
                return Ok(None);
            }
            Undo::Service { first: true } => {
                let mut job = crate::manager::job(ctx, Some(cx.lock))?;
                job.uninstall()?;
                format!(
                    "uninstalled the job it had installed ({})",
                    crate::manager::definition(ctx).display()
                )
            }
            Undo::AgentFolder(dir) => match std::fs::remove_dir(&dir) {
                Ok(()) => format!("removed the AgentFolder {}", dir.display()),
                // Never made (a run killed before it), or taken back already.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(_) => format!("kept the AgentFolder {} (no longer empty)", dir.display()),
            },
            Undo::File {
                path,
                mode,
                before,
                bytes,
                ..
            } => return restore(cx, path, mode, before, bytes),
            Undo::NpmUninstall {
                npm,
                prefix,
                package,
                running,
            } => {
                let left = running.is_some_and(|r| r.stop(&npm_argv("install", &prefix, &package)));
                let args = npm_argv("uninstall", &prefix, &package);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (env, _) = super::npm_environment(ctx, cx.plan)?;
                let f = process::run(
                    &npm,
                    &args,
                    ChildEnv::Exactly(&env),
                    Duration::from_secs(300),
                )?;
                if f.code != 0 {
                    anyhow::bail!("`npm uninstall` exited {}", f.code)
                }
                match left {
                    true => format!("stopped the npm install left running, uninstalled {package}"),
                    false => format!("uninstalled {package}"),
                }
            }
        }))
    }
}

/// npm's arguments for `verb` (`install`, `uninstall`) of `package`, globally under `prefix`.
pub(super) fn npm_argv(verb: &str, prefix: &std::path::Path, package: &str) -> Vec<String> {
    vec![
        verb.to_owned(),
        "-g".to_owned(),
        "--prefix".to_owned(),
        prefix.display().to_string(),
        package.to_owned(),
    ]
}

/// Puts a file back: its exact bytes when this run held them, else what the receipt says.
fn restore(
    cx: &mut Undoing<'_>,
    path: PathBuf,
    mode: Option<u32>,
    before: Before,
    bytes: Option<Option<Vec<u8>>>,
) -> anyhow::Result<Option<String>> {
    let put = |b: &[u8]| -> anyhow::Result<String> {
        let held = fsutil::lock_sidecar(&path)?;
        fsutil::write_atomic(&held, &path, b, mode)?;
        Ok(format!("restored {}", path.display()))
    };
    let removed = |path: &PathBuf| -> anyhow::Result<String> {
        std::fs::remove_file(path).or_else(ignore_missing)?;
        Ok(format!("removed {}", path.display()))
    };
    Ok(Some(match (bytes, before) {
        (Some(Some(b)), _) => put(&b)?,
        (None, Before::Text(text)) => put(text.as_bytes())?,
        (Some(None), _) | (None, Before::Absent) => removed(&path)?,
        (None, Before::Keys(keys)) => {
            let now = fsutil::read_regular(&path, crate::config::MAX_CONFIG_BYTES)?
                .and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
                .unwrap_or_default();
            let map: Map<String, Value> = keys
                .into_iter()
                .filter_map(|(k, v)| match v {
                    Some(v) => Some((k, v)),
                    None => now.get(&k).cloned().map(|v| (k, v)),
                })
                .collect();
            let mut b = serde_json::to_vec_pretty(&map)?;
            b.push(b'\n');
            put(&b)?
        }
        (None, Before::Generated) => {
            cx.regenerate = Some(path);
            return Ok(None);
        }
        (None, Before::Unknown) => return Ok(None),
    }))
}

fn ignore_missing(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}

/// What a receipt's steps may name on this stack, from its config as it is now: the npm and
/// prefix of the pinned Node setup installs with, the AgentFolder setup makes, and whether the
/// stack may be one the killed run created (its audit log holds no other command's line).
pub(super) struct Allowed {
    pub(super) npm: PathBuf,
    pub(super) prefix: PathBuf,
    pub(super) agent_folder: PathBuf,
    pub(super) fresh: bool,
}

/// Whether a step read from a receipt is one this stack's setup could have journaled: its
/// paths are the ones setup writes, its package one setup installs with the npm setup runs,
/// what a file is put back to one setup would keep (a receipt edited by hand never points a
/// revert elsewhere, nor runs another program, nor writes a definition of its own).
pub(super) fn plausible(ctx: &Context, allowed: &Allowed, step: &Undo) -> bool {
    let st = &ctx.stack;
    match step {
        Undo::Stack { root, above } => {
            *root == st.root
                && allowed.fresh
                && above
                    .as_ref()
                    .is_none_or(|a| Some(a.as_path()) == st.root.parent() && *a != st.home)
        }
        Undo::Created(c) => c.within(ctx, &allowed.agent_folder),
        Undo::NpmUninstall {
            npm,
            prefix,
            package,
            ..
        } => {
            PROVIDERS.iter().any(|p| p.npm_package == package)
                && *npm == allowed.npm
                && *prefix == allowed.prefix
        }
        Undo::File { path, before, .. } if *path == st.config_path() => match before {
            Before::Text(t) => matches!(serde_json::from_str(t), Ok(Value::Object(_))),
            Before::Generated => false,
            Before::Absent | Before::Keys(_) | Before::Unknown => true,
        },
        Undo::File { path, before, .. } => {
            *path == crate::manager::definition(ctx)
                && matches!(before, Before::Absent | Before::Generated)
        }
        Undo::AgentFolder(dir) => *dir == allowed.agent_folder,
        Undo::StopHost | Undo::HostStarted | Undo::Service { .. } => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_without_secrets_is_kept_whole_and_one_with_secrets_keeps_none_of_them() {
        let plain = b"{\"port\": 8802}";
        assert!(matches!(Before::of_config(Some(plain)), Before::Text(t) if t.as_bytes() == plain));
        assert!(matches!(Before::of_config(None), Before::Absent));
        assert!(matches!(Before::of_config(Some(b"{oops")), Before::Unknown));
        let secret = br#"{"port": 8802, "relay_key": "k3y-value", "relay_url": "https://a:pw-99@h/x", "dashboard_password_hash": "scrypt$N=1$s$k"}"#;
        let before = Before::of_config(Some(secret));
        let text = serde_json::to_string(&before).unwrap();
        for leaked in ["k3y-value", "pw-99", "scrypt$"] {
            assert!(!text.contains(leaked), "{text}");
        }
        let Before::Keys(keys) = before else {
            panic!("{text}")
        };
        let names: Vec<(&str, bool)> = keys
            .iter()
            .map(|(k, v)| (k.as_str(), v.is_some()))
            .collect();
        assert_eq!(
            names,
            [
                ("port", true),
                ("relay_key", false),
                ("relay_url", false),
                ("dashboard_password_hash", false)
            ]
        );
    }
}
