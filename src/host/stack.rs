//! Stacks and every path derived from one: config dir, run dir, log dir, label, plist, port.
//!
//! The table in docs/behaviour.md "Stacks, paths and labels" lives here and nowhere else; every
//! other module asks a [`Stack`] for its paths.

use std::path::{Path, PathBuf};

use crate::error::Invalid;

/// The default stack name.
pub const DEFAULT_STACK: &str = "production";
/// The other stack whose files Oysterun names like production's (no `-NAME` suffix).
pub const STAGING_STACK: &str = "staging";
/// The launchd label of production; every other stack's is `BASE_LABEL.NAME`.
pub const BASE_LABEL: &str = "com.oysterun.host";

/// One Oysterun stack and the paths that belong to it.
#[derive(Debug, Clone)]
pub struct Stack {
    pub name: String,
    pub home: PathBuf,
    pub config_dir: PathBuf,
    /// Set when `OYSTERUN_CONFIG_DIR` replaced the table's config dir (said in output).
    pub config_dir_overridden: bool,
    /// The stack root: `~/.oysterun` for production, `$STACKS/NAME` otherwise. The Host gets it
    /// as `OYSTERUN_ROUTEC_STACK_ROOT`; an `OYSTERUN_CONFIG_DIR` override does not move it.
    pub root: PathBuf,
    pub run_dir: PathBuf,
    pub log_dir: PathBuf,
    pub label: String,
    /// The table's default port; `None` for custom stacks, which record theirs in config.
    pub default_port: Option<u16>,
}

/// The environment variables that shape stack paths, captured once so tests can pass their own.
#[derive(Debug, Clone, Default)]
pub struct StackEnv {
    pub home: Option<PathBuf>,
    pub stacks_dir: Option<PathBuf>,
    pub config_dir: Option<PathBuf>,
}

/// A stack name that passed [`validate_name`]: what the command line names, checked once
/// when it is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackName(String);

impl StackName {
    /// `name`, if it is a valid stack name (else the error that says the rule).
    pub fn parse(name: &str) -> Result<StackName, Invalid> {
        validate_name(name)?;
        Ok(StackName(name.to_owned()))
    }

    /// `production`, the stack of a command line that names none.
    pub fn production() -> StackName {
        StackName(DEFAULT_STACK.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for StackName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Names that are not stacks: `all` (1.5.3's scripts took `--stack all` for every stack;
/// oyster's word is `--all`) and the names Oysterun 1.5.3 reserves for itself
/// (`oysterun_service_common.sh`, `is_reserved_custom_stack_name`).
pub const RESERVED_NAMES: &[&str] = &["all", "local", "phone", "daily", "shared"];

/// Checks a stack name: `production`, `staging`, or `[a-z][a-z0-9-]{0,31}`, not reserved.
pub fn validate_name(name: &str) -> Result<(), Invalid> {
    if name == "all" {
        return Err(StackRefusal::All.into());
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(StackRefusal::Reserved {
            name: name.to_owned(),
        }
        .into());
    }
    let bytes = name.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 32
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err(StackRefusal::BadName {
            name: name.to_owned(),
        }
        .into())
    }
}

/// Why a stack's name, its directories or its files refuse a command. Words (and hints):
/// `commands/words/host.rs`; said as [`Invalid`] or `Failed` (as each refusal is today).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackRefusal {
    /// `all` given as a name.
    All,
    /// A name Oysterun 1.5.3 keeps for itself.
    Reserved {
        name: String,
    },
    /// Not `production`, `staging` or `[a-z][a-z0-9-]{0,31}`.
    BadName {
        name: String,
    },
    NoHome,
    RelativeHome {
        home: PathBuf,
    },
    /// `OYSTERUN_STACKS_DIR` or `OYSTERUN_CONFIG_DIR` not absolute.
    RelativeDir {
        var: &'static str,
        value: PathBuf,
    },
    /// The log directory is `what` ("not a directory", "a symlink to nothing").
    LogDir {
        dir: PathBuf,
        what: &'static str,
    },
    /// The Host log is `kind` (`sys::fs::not_regular`'s words), not a regular file.
    SpecialLog {
        log: PathBuf,
        kind: &'static str,
    },
    /// `~/Library/LaunchAgents` owned by someone else, or not writable by its owner.
    AgentsDir {
        dir: PathBuf,
        owner: u32,
        me: u32,
        mode: u32,
    },
    /// A custom stack with nothing on disk; `list` names the known ones, `near` a likely typo.
    Unknown {
        name: String,
        list: String,
        near: Option<String>,
    },
}

impl std::error::Error for StackRefusal {}

impl Stack {
    pub fn new(name: &str, env: &StackEnv) -> Result<Stack, Invalid> {
        validate_name(name)?;
        let home = env.home.clone().ok_or(StackRefusal::NoHome)?;
        if !home.is_absolute() {
            return Err(StackRefusal::RelativeHome { home }.into());
        }
        for (var, value) in [
            ("OYSTERUN_STACKS_DIR", &env.stacks_dir),
            ("OYSTERUN_CONFIG_DIR", &env.config_dir),
        ] {
            if let Some(v) = value.as_ref().filter(|v| !v.is_absolute()) {
                return Err(StackRefusal::RelativeDir {
                    var,
                    value: v.clone(),
                }
                .into());
            }
        }
        let stacks = env
            .stacks_dir
            .clone()
            .unwrap_or_else(|| home.join(".oysterun-stacks"));
        let (root, config_dir, run_dir, log_dir, label, default_port) = if name == DEFAULT_STACK {
            let base = home.join(".oysterun");
            (
                base.clone(),
                base.clone(),
                base.join("run"),
                base.join("logs"),
                BASE_LABEL.to_owned(),
                Some(8802),
            )
        } else {
            let base = stacks.join(name);
            let port = (name == STAGING_STACK).then_some(9902);
            (
                base.clone(),
                base.join("host"),
                base.join("run"),
                base.join("logs"),
                format!("{BASE_LABEL}.{name}"),
                port,
            )
        };
        let overridden = env.config_dir.is_some();
        Ok(Stack {
            name: name.to_owned(),
            config_dir: env.config_dir.clone().unwrap_or(config_dir),
            config_dir_overridden: overridden,
            home,
            root,
            run_dir,
            log_dir,
            label,
            default_port,
        })
    }

    pub fn config_path(&self) -> PathBuf {
        self.config_dir.join("config.json")
    }

    pub fn plist_path(&self) -> PathBuf {
        self.home
            .join("Library/LaunchAgents")
            .join(format!("{}.plist", self.label))
    }

    pub fn log_path(&self) -> PathBuf {
        self.log_dir.join("oysterun-host.log")
    }

    /// The log `oyster logs` shows: oyster's own ([`Stack::log_path`]); for a custom stack
    /// migrated from Oysterun 1.5.3 whose Host has not written that one yet, the name 1.5.3's
    /// scripts gave it (`logs/oysterun-host-NAME.log`), returned as the second value so the
    /// caller says which file it shows.
    pub fn log_to_show(&self) -> (PathBuf, Option<PathBuf>) {
        let own = self.log_path();
        if self.is_builtin() || std::fs::symlink_metadata(&own).is_ok() {
            return (own, None);
        }
        let legacy = self
            .log_dir
            .join(format!("oysterun-host-{}.log", self.name));
        if std::fs::symlink_metadata(&legacy).is_ok() {
            (legacy.clone(), Some(legacy))
        } else {
            (own, None)
        }
    }

    /// The log directory first: a plain file (or a FIFO) or a dangling symlink where it should
    /// be cannot hold the log (a symlink to a directory is followed, as the Host's log is).
    /// Missing is fine: oyster creates it.
    pub fn refuse_bad_log_dir(&self) -> Result<(), Invalid> {
        let dir = &self.log_dir;
        let what = match (std::fs::metadata(dir), std::fs::symlink_metadata(dir)) {
            (Ok(m), _) if !m.is_dir() => Some("not a directory"),
            (Err(_), Ok(_)) => Some("a symlink to nothing"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(StackRefusal::LogDir {
                dir: dir.clone(),
                what,
            }
            .into());
        }
        Ok(())
    }

    /// docs/behaviour.md §9: the Host log launchd (or direct startup) opens for the Host's output
    /// must be a regular file, or not exist yet. A FIFO there blocks launchd's spawn (and every
    /// launchctl call after it), a symlink sends the Host's output wherever it points: refused,
    /// before anything is written or loaded, with the fix.
    pub fn refuse_special_log(&self) -> Result<(), Invalid> {
        self.refuse_bad_log_dir()?;
        let log = self.log_path();
        let Some(kind) = crate::sys::fs::not_regular(&log) else {
            return Ok(());
        };
        Err(StackRefusal::SpecialLog { log, kind }.into())
    }

    /// `~/Library/LaunchAgents` must be this user's to write: after a `sudo` mistake it is
    /// owned by root, or someone made it read-only (mode 555). Refused before anything is
    /// written, naming the directory, its owner and mode, and the fix; a missing directory is
    /// fine (oyster creates it).
    pub fn refuse_unwritable_agents_dir(&self) -> Result<(), crate::error::Failed> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = self.home.join("Library/LaunchAgents");
        let Ok(meta) = std::fs::metadata(&dir) else {
            return Ok(());
        };
        let me = crate::sys::user::euid();
        let mode = meta.permissions().mode() & 0o7777;
        let owner = meta.uid();
        if owner != me || mode & 0o300 != 0o300 {
            return Err(StackRefusal::AgentsDir {
                dir,
                owner,
                me,
                mode,
            }
            .into());
        }
        Ok(())
    }

    /// The Host's pid file, named as Oysterun's scripts name it (docs/behaviour.md stacks table):
    /// `oysterun-host.pid` for production and staging, `oysterun-host-NAME.pid` otherwise.
    pub fn pid_path(&self) -> PathBuf {
        self.run_dir.join(format!("{}.pid", self.host_file_stem()))
    }

    /// The Host's origin file (tab-separated `key value` rows), beside the pid file.
    pub fn origin_path(&self) -> PathBuf {
        self.run_dir
            .join(format!("{}.origin.tsv", self.host_file_stem()))
    }

    /// oyster's own record of what `oyster host exec` passed to the Host (owner-only).
    pub fn exec_record_path(&self) -> PathBuf {
        self.run_dir.join("oyster-exec.json")
    }

    /// The stack's lifecycle lock: every command that writes or loads holds it for its run. It
    /// lives in oyster's per-user lock directory, named by the job's label, not in the stack:
    /// taking it creates no stack (a refused first command leaves nothing to remove), and a
    /// cleanup that removes the stack never removes the lock a waiter is about to take.
    pub fn lifecycle_lock_path(&self) -> PathBuf {
        lock_dir(&self.home).join(format!("{}.lock", self.label))
    }

    /// Refuses, before anything is created, a lock directory this user cannot use (a part of
    /// its path that is no directory, or the deepest one there another uid's, left by a `sudo`
    /// run): said with the fix ([`crate::host::lock_dir::refuse_unusable`]).
    pub fn refuse_unusable_lock_dir(&self) -> Result<(), crate::error::Failed> {
        crate::host::lock_dir::refuse_unusable(&self.home, &self.lifecycle_lock_path())
    }

    /// Where earlier oyster versions kept the lifecycle lock: bookkeeping `cleanup` removes.
    pub fn legacy_lock_path(&self) -> PathBuf {
        self.run_dir.join("oyster.lock")
    }

    /// The marker written before a change and removed after verification (a run killed
    /// half-way is re-verified by the next one).
    pub fn pending_path(&self) -> PathBuf {
        self.run_dir.join("pending")
    }

    /// The plist that last verified, which a rollback restores.
    pub fn last_good_plist_path(&self) -> PathBuf {
        self.run_dir.join("last-good.plist")
    }

    /// The pinned Node's version, cached by the binary's identity.
    pub fn node_version_cache_path(&self) -> PathBuf {
        self.run_dir.join("node-version.cache")
    }

    /// The config's lock (`config.json.lock`, beside it), which every config writer takes.
    pub fn config_lock_path(&self) -> PathBuf {
        crate::sys::fs::sidecar_lock_path(&self.config_path())
    }

    /// The pid file's lock (`<pid file>.lock`), held while the identity files are replaced.
    pub fn pid_lock_path(&self) -> PathBuf {
        crate::sys::fs::sidecar_lock_path(&self.pid_path())
    }

    /// The Host's identity files: the pid file, the origin file and oyster's exec record.
    pub fn identity_paths(&self) -> [PathBuf; 3] {
        [self.pid_path(), self.origin_path(), self.exec_record_path()]
    }

    /// `<stack root>/matrix/homeserver.db`, the Host's Matrix storage.
    pub fn matrix_db_path(&self) -> PathBuf {
        self.root.join("matrix").join("homeserver.db")
    }

    /// `oysterun-host`, or `oysterun-host-NAME` for a custom stack, exactly as Oysterun's
    /// `configure_stack_runtime` names them: its presets `test1`…`test4` use the unsuffixed
    /// names too (its own restart waits for those files).
    fn host_file_stem(&self) -> String {
        const OYSTERUN_PRESETS: [&str; 4] = ["test1", "test2", "test3", "test4"];
        if self.name == DEFAULT_STACK
            || self.name == STAGING_STACK
            || OYSTERUN_PRESETS.contains(&self.name.as_str())
        {
            "oysterun-host".to_owned()
        } else {
            format!("oysterun-host-{}", self.name)
        }
    }

    pub fn audit_path(&self) -> PathBuf {
        self.log_dir.join("service-control.jsonl")
    }

    /// Whether anything of this stack exists on disk: its plist, or its stack directory's
    /// config or run dir (`~/.oysterun` for production). A log dir alone does not count (older
    /// versions created one for any name they were given), nor a config dir that
    /// `OYSTERUN_CONFIG_DIR` points every stack at.
    pub fn on_disk(&self) -> bool {
        let stack_root = self.run_dir.parent().unwrap_or(&self.run_dir);
        let own_config = if self.name == DEFAULT_STACK {
            stack_root.to_path_buf()
        } else {
            stack_root.join("host")
        };
        // A run dir that holds only lock files is what a refused command left: not a stack.
        let run_state = std::fs::read_dir(&self.run_dir).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| !e.file_name().to_string_lossy().ends_with(".lock"))
        });
        self.plist_path().exists()
            || run_state
            || own_config.join("config.json").exists()
            || (self.name != DEFAULT_STACK && own_config.is_dir())
    }

    /// Whether the table names this stack without anything on disk (production, staging).
    pub fn is_builtin(&self) -> bool {
        self.default_port.is_some()
    }
}

/// Every stack found on disk, production and staging first, then the others by name: a
/// LaunchAgent `com.oysterun.host[.NAME].plist`, `~/.oysterun`, or `$STACKS/NAME` with a config
/// or run dir (docs/behaviour.md §10, `agent list`).
pub fn discover(env: &StackEnv) -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    let Some(home) = env.home.as_deref() else {
        return vec![];
    };
    let entries = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for file in entries(&home.join("Library/LaunchAgents")) {
        let Some(label) = file.strip_suffix(".plist") else {
            continue;
        };
        if label == BASE_LABEL {
            names.insert(DEFAULT_STACK.to_owned());
        } else if let Some(name) = label.strip_prefix(&format!("{BASE_LABEL}.")) {
            if validate_name(name).is_ok() && name != DEFAULT_STACK {
                names.insert(name.to_owned());
            }
        }
    }
    let stacks = env
        .stacks_dir
        .clone()
        .unwrap_or_else(|| home.join(".oysterun-stacks"));
    for name in entries(&stacks) {
        if validate_name(&name).is_ok() && name != DEFAULT_STACK {
            names.insert(name);
        }
    }
    if home.join(".oysterun").is_dir() {
        names.insert(DEFAULT_STACK.to_owned());
    }
    // Keep only what really is a stack (a stacks dir may hold other things).
    let mut found: Vec<String> = names
        .into_iter()
        .filter(|n| Stack::new(n, env).is_ok_and(|s| s.on_disk()))
        .collect();
    let rank = |n: &String| match n.as_str() {
        DEFAULT_STACK => 0,
        "staging" => 1,
        _ => 2,
    };
    found.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    found
}

/// Refuses a custom stack that has nothing on disk (a typo, most likely): exit 2 naming the
/// stacks that do exist. Production and staging always exist in the table.
pub fn require_known(stack: &Stack, env: &StackEnv) -> Result<(), Invalid> {
    if stack.is_builtin() || stack.on_disk() {
        return Ok(());
    }
    let known = discover(env);
    let list = if known.is_empty() {
        "none yet".to_owned()
    } else {
        known.join(", ")
    };
    let mut candidates: Vec<&str> = known.iter().map(String::as_str).collect();
    candidates.extend([DEFAULT_STACK, "staging"]);
    let near = nearest(&stack.name, &candidates).map(str::to_owned);
    Err(StackRefusal::Unknown {
        name: stack.name.clone(),
        list,
        near,
    }
    .into())
}

/// The candidate closest to `typed` by edit distance, when it is close enough to be a typo
/// (at most 2 edits, and fewer than half the name).
fn nearest<'a>(typed: &str, candidates: &[&'a str]) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    candidates
        .iter()
        .map(|c| (distance(typed, c), *c))
        .filter(|(d, _)| *d <= 2 && *d * 2 < typed.chars().count().max(2))
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;

/// oyster's per-user lock directory under `home`: `~/Library/Application Support/oyster/locks`
/// on macOS, `~/.local/state/oyster/locks` elsewhere (`XDG_STATE_HOME` is not read: where root
/// may write is decided by HOME alone, which root's checks cover). A state directory, not a
/// cache: `~/.cache` and `~/Library/Caches` are emptied by hand and by cleaners as a matter of
/// course, and a lock file removed while a run holds it lets the next oyster create a fresh one
/// and run beside it.
pub fn lock_dir(home: &Path) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/oyster/locks")
    } else {
        home.join(".local/state/oyster/locks")
    }
}
