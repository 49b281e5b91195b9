//! The per-run context: the stack, the environment oyster reads (captured once), where
//! resolution searches, and the printer. Built once by `lib.rs`, passed down to every command.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use std::cell::OnceCell;
use std::rc::Rc;

use crate::host::stack::{Stack, StackEnv};
use crate::launchctl::{Launchctl, LocateError};
use crate::output::printer::Printer;
use crate::provider::resolve::Search;
use crate::verify::ProofFloor;

/// Every environment variable oyster reads, captured once at start (documented in `--help`'s
/// ENVIRONMENT section). Nothing below reads `std::env` again — except the printer, which
/// reads `NO_COLOR` and `TERM` when it is first used to decide on colour — so a run sees one
/// consistent environment and tests can see exactly what oyster was given.
#[derive(Debug, Clone)]
pub struct EnvSnapshot {
    /// `HOME`: `~`, as launchd's.
    pub home: Option<PathBuf>,
    /// `PATH`: searched for providers and node (discovery only; never given to the Host).
    pub path: Option<OsString>,
    /// `OYSTERUN_STACKS_DIR`.
    pub stacks_dir: Option<PathBuf>,
    /// `OYSTERUN_CONFIG_DIR`.
    pub config_dir: Option<PathBuf>,
    /// `OYSTERUN_ROOT`.
    pub root: Option<PathBuf>,
    /// `OYSTERUN_NODE_BIN`.
    pub node_bin: Option<String>,
    /// `npm_config_prefix`: where the user's `npm install -g` puts packages.
    pub npm_prefix: Option<PathBuf>,
    /// `OYSTER_LAUNCHCTL`.
    pub launchctl: Option<OsString>,
    /// `OYSTER_LAUNCHCTL_TIMEOUT_SECS`.
    pub launchctl_timeout: Option<String>,
    /// `OYSTER_SYSTEMCTL`: another `systemctl` (or `none`).
    pub systemctl: Option<OsString>,
    /// `XDG_RUNTIME_DIR`: where the user manager answers (`/run/user/<uid>` when unset, said).
    pub runtime_dir: Option<OsString>,
    /// `XDG_CONFIG_HOME`: where user units live (`~/.config` when unset).
    pub config_home: Option<PathBuf>,
    /// `OYSTER_MANAGED_PREFERENCES_DIR`: stands in for `/Library/Managed Preferences`.
    pub managed_dir: Option<PathBuf>,
    /// `OYSTER_CONSOLE_UID`: who owns the console, instead of `/dev/console` (tests, Linux).
    pub console_uid: Option<String>,
    /// `OYSTER_ENV_PROOF`, parsed once: `exec` or `launchd` force the proof used when the
    /// kernel hides the Host's environment (for testing those paths off macOS).
    pub proof_floor: ProofFloor,
    /// The caller's proxy and CA variables ([`NOTICED`]): setup notices them and offers to
    /// declare them (`oyster env`); nothing gives them to the Host otherwise.
    pub noticed: Noticed,
}

/// The variables of the caller's shell that setup notices (never inherits): what a network
/// behind a proxy or a TLS-inspecting firewall needs. The proxies come first (doctor checks
/// the first six as proxy URLs).
pub const NOTICED: [&str; 9] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
];

/// [`NOTICED`] variables with their values (secrets: `Debug` shows names only).
#[derive(Clone, Default)]
pub struct Noticed(pub Vec<(String, String)>);

impl std::fmt::Debug for Noticed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

impl EnvSnapshot {
    /// Reads the process environment; empty values count as unset.
    pub fn from_process() -> EnvSnapshot {
        let os = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let path = |k: &str| os(k).map(PathBuf::from);
        let text = |k: &str| os(k).map(|v| v.to_string_lossy().into_owned());
        EnvSnapshot {
            home: path("HOME"),
            path: std::env::var_os("PATH"),
            stacks_dir: path("OYSTERUN_STACKS_DIR"),
            config_dir: path("OYSTERUN_CONFIG_DIR"),
            root: path("OYSTERUN_ROOT"),
            node_bin: text("OYSTERUN_NODE_BIN"),
            npm_prefix: path("npm_config_prefix"),
            launchctl: os("OYSTER_LAUNCHCTL"),
            launchctl_timeout: text("OYSTER_LAUNCHCTL_TIMEOUT_SECS"),
            systemctl: os("OYSTER_SYSTEMCTL"),
            runtime_dir: os("XDG_RUNTIME_DIR"),
            config_home: path("XDG_CONFIG_HOME"),
            console_uid: text(crate::launchctl::CONSOLE_VAR),
            proof_floor: ProofFloor::from_env(text("OYSTER_ENV_PROOF").as_deref()),
            managed_dir: path("OYSTER_MANAGED_PREFERENCES_DIR"),
            noticed: Noticed(
                NOTICED
                    .iter()
                    .filter_map(|k| Some(((*k).to_owned(), std::env::var(k).ok()?)))
                    .filter(|(_, v)| !v.is_empty())
                    .collect(),
            ),
        }
    }

    /// What shapes a stack's paths.
    pub fn stack_env(&self) -> StackEnv {
        StackEnv {
            home: self.home.clone(),
            stacks_dir: self.stacks_dir.clone(),
            config_dir: self.config_dir.clone(),
        }
    }
}

/// How long a command waits for another one on the same stack (longer than one verification
/// plus its rollback).
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(180);

/// How the user typed the command, so a hint echoes that form: `oyster start` after
/// `oyster stop`, `oyster agent start` after `oyster agent stop`, and the stack only when one
/// was given (as it was given: `dev` or `--stack dev`).
#[derive(Debug, Clone, Copy)]
pub struct Typed {
    /// `oyster agent VERB` rather than its top-level form.
    pub agent_form: bool,
    pub stack: StackForm,
    /// How a verb is typed in a suggestion (`oyster` or `oyster agent`), given whether the
    /// user typed the agent form: read from the command line's own tree by `cli`.
    pub head: fn(&str, bool) -> &'static str,
}

/// How the stack was named on the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StackForm {
    /// Not at all (production).
    #[default]
    Default,
    /// `--stack NAME`.
    Flag,
    /// A plain name after the verb (`oyster restart dev`).
    Plain,
}

/// Suggested commands in the form the user typed, for the stack this run is about.
#[derive(Debug, Clone)]
pub struct Hints {
    typed: Typed,
    stack: String,
}

impl Hints {
    /// `agent("start")` is `oyster start` after `oyster stop`, `oyster agent start --stack
    /// dev` after `oyster agent stop --stack dev`, `oyster start dev` after `oyster stop dev`.
    /// Verbs without a top-level alias are always `oyster agent VERB`.
    pub fn agent(&self, verb: &str) -> String {
        let head = (self.typed.head)(verb, self.typed.agent_form);
        format!("{head} {verb}{}", self.suffix())
    }

    /// Any other command, with the stack as given: `cmd("host stop")` is `oyster host stop`,
    /// `oyster host stop dev` or `oyster host stop --stack dev`.
    pub fn cmd(&self, words: &str) -> String {
        format!("oyster {words}{}", self.suffix())
    }

    /// A command that takes no plain STACK (`providers set ID CMD`), with the stack as
    /// `--stack NAME` whenever the user named one: `flag_cmd("providers auto claude")` is
    /// `oyster providers auto claude --stack dev` after `oyster doctor dev` (a plain `dev`
    /// there would be read as one more argument).
    pub fn flag_cmd(&self, words: &str) -> String {
        match self.typed.stack {
            StackForm::Default => format!("oyster {words}"),
            StackForm::Flag | StackForm::Plain => format!("oyster {words} --stack {}", self.stack),
        }
    }

    /// The stack as the user gave it, to append to a suggested command: ``, ` --stack dev` or
    /// ` dev`.
    pub fn suffix(&self) -> String {
        match self.typed.stack {
            StackForm::Default => String::new(),
            StackForm::Flag => format!(" --stack {}", self.stack),
            StackForm::Plain => format!(" {}", self.stack),
        }
    }
}

/// A typed fact whose words suggest commands, said with them in the form the user typed and
/// for this run's stack (a provider's reason, launchd's absence); `Display` is the form for
/// no stack. Written in `commands/words/`.
pub trait Worded {
    fn words(&self, hints: &Hints) -> String;
}

/// What every command starts from.
pub struct Context {
    pub stack: Stack,
    pub search: Search,
    pub env: EnvSnapshot,
    /// The stable path oyster runs as (`host::launcher`): what launchd and direct startup run
    /// as the Host's launch program, `<oyster> host exec --stack NAME`.
    pub launcher: PathBuf,
    pub out: &'static Printer,
    /// How the user typed this command (hints echo it).
    pub typed: Typed,
    /// launchctl, located on first use and shared by every stack of this run
    /// ([`Context::launchctl`]).
    launchctl: Rc<OnceCell<Result<Launchctl, LocateError>>>,
    /// The service manager, chosen on first use ([`Context::manager`]).
    manager: Rc<OnceCell<Result<Manager, NoManager>>>,
}

/// The service manager a stack's Host runs under on this machine.
#[derive(Debug, Clone)]
pub enum Manager {
    /// launchd (macOS, or a launchctl named by `OYSTER_LAUNCHCTL`): [`Context::launchctl`].
    Launchd,
    /// The systemd user manager, reached through this `systemctl --user`.
    Systemd(std::rc::Rc<crate::systemd::Systemctl>),
}

/// Why no service manager runs the Host here: the direct (pid-file) mode is what is left.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoManager {
    /// launchctl could not be used, and this is not Linux (or launchd was named).
    #[error(transparent)]
    Launchd(#[from] LocateError),
    /// A systemctl variable set wrong (exit 2).
    #[error(transparent)]
    Systemctl(#[from] crate::systemd::LocateError),
    /// systemctl is there, but no user manager answers it.
    #[error("{0}")]
    Unreachable(Unreachable),
}

/// launchctl could not be used (`launchd`), and no systemd user manager answers `systemctl`
/// (`why`). Words: `commands/words/context.rs`.
#[derive(Debug, Clone)]
pub struct Unreachable {
    pub launchd: LocateError,
    pub systemctl: PathBuf,
    pub why: String,
}

impl NoManager {
    /// A variable the user set is wrong (exit 2); a missing manager is a failure (exit 1).
    pub fn is_invalid_input(&self) -> bool {
        match self {
            NoManager::Launchd(e) => e.is_invalid_input(),
            NoManager::Systemctl(e) => e.is_invalid_input(),
            NoManager::Unreachable(_) => false,
        }
    }
}

impl crate::error::HasKind for NoManager {
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::invalid_if(self.is_invalid_input())
    }
}

/// What the context says (its notes and its one refusal of a variable). Words:
/// `commands/words/context.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextNote {
    /// Waiting for another oyster (`holder`; empty: starting) to release the stack's lock.
    Waiting {
        holder: String,
        stack: String,
        secs: u64,
    },
    /// `OYSTER_MANAGED_PREFERENCES_DIR` stands in for the system's directory.
    ManagedDir(PathBuf),
    /// `OYSTERUN_CONFIG_DIR` is the config dir.
    ConfigDir(PathBuf),
    /// `var` (the console uid's variable) is not a uid.
    NotAUid { var: &'static str, value: String },
}

/// Planning reads exactly these parts of the context (it lives below the command layer and
/// takes them explicitly).
impl<'a> From<&'a Context> for crate::host::plan::PlanEnv<'a> {
    fn from(ctx: &'a Context) -> Self {
        crate::host::plan::PlanEnv {
            stack: &ctx.stack,
            search: &ctx.search,
            root: ctx.env.root.as_deref(),
            node_bin: ctx.env.node_bin.as_deref(),
            npm_prefix: ctx.env.npm_prefix.as_deref(),
            launcher: &ctx.launcher,
            stacks_dir: ctx.env.stacks_dir.as_deref(),
            managed_dir: ctx.env.managed_dir.as_deref(),
            launchd: match ctx.env.launchctl.as_deref() {
                Some(v) => v != "none",
                None => cfg!(target_os = "macos"),
            },
            out: ctx.reporter(),
        }
    }
}

mod refuse;
pub use refuse::WhereRefusal;

impl Context {
    /// Builds the context for `stack`; the printer learns the home directory and the secret
    /// values in the stack's config, so no output can show them. `argv0` is how oyster was
    /// invoked (it decides the launcher path).
    pub fn new(
        stack_name: &str,
        typed: Typed,
        env: EnvSnapshot,
        argv0: Option<&OsStr>,
        out: &'static Printer,
    ) -> Result<Context, crate::error::Invalid> {
        let stack = Stack::new(stack_name, &env.stack_env())?;
        let exe =
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from(argv0.unwrap_or_default()));
        let cwd = std::env::current_dir().ok();
        let launcher = crate::host::launcher::stable_path(&crate::host::launcher::Invocation {
            argv0,
            path_var: env.path.as_deref(),
            cwd: cwd.as_deref(),
            current_exe: &exe,
        });
        let search = Search::new(env.path.clone(), &stack.home);
        out.set_home(&stack.home);
        // Read when something is first printed, or handed over by a command that reads the
        // config itself (each file is opened once per run).
        out.add_secret_source(&stack.config_path(), crate::config::secret_values_on_disk);
        out.add_secret_source(
            &stack.plist_path(),
            crate::host::plist::secret_values_on_disk,
        );
        // Every declared value (`oyster env`) is a secret, whatever its name, but a setting's
        // (`environment::SETTINGS`: `NODE_ENV=production` must not blank the stack's name).
        out.add_secret_source(
            &crate::host::declared::path(&stack),
            crate::config::environment::secret_values_on_disk,
        );
        Ok(Context {
            stack,
            search,
            env,
            launcher,
            out,
            typed,
            launchctl: Rc::default(),
            manager: Rc::default(),
        })
    }

    /// launchctl, located once per run on first use (`$OYSTER_LAUNCHCTL`, else
    /// `/bin/launchctl`), with this run's memos of what it answered. Why it cannot be used is
    /// the same error each time it is asked.
    pub fn launchctl(&self) -> Result<&Launchctl, LocateError> {
        self.launchctl
            .get_or_init(|| {
                Launchctl::locate(
                    self.env.launchctl.as_deref(),
                    self.env.launchctl_timeout.as_deref(),
                )
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The service manager of this run, chosen once: launchd where launchctl is (macOS, or
    /// `OYSTER_LAUNCHCTL`); on Linux without one, the systemd user manager when `systemctl
    /// --user` reaches one that runs (`SystemState` running or degraded); otherwise none, with
    /// the cause (the direct mode is what is left).
    pub fn manager(&self) -> Result<Manager, NoManager> {
        self.manager.get_or_init(|| self.choose_manager()).clone()
    }

    fn choose_manager(&self) -> Result<Manager, NoManager> {
        let launchd = match self.launchctl() {
            Ok(_) => return Ok(Manager::Launchd),
            Err(e) => e,
        };
        // A launchctl named (not `none`) is launchd asked for: its error stands.
        let named = self.env.launchctl.as_deref().is_some_and(|v| v != "none");
        if named || launchd.is_invalid_input() || !cfg!(target_os = "linux") {
            return Err(launchd.into());
        }
        let sc = match crate::systemd::Systemctl::locate(
            self.env.systemctl.as_deref(),
            self.env.runtime_dir.as_deref(),
        ) {
            Ok(sc) => sc.with_home(&self.stack.home),
            Err(e) if e.is_invalid_input() => return Err(e.into()),
            // No systemctl, or switched off: launchd's reason stands.
            Err(_) => return Err(launchd.into()),
        };
        match sc.manager_state() {
            Ok(_) => Ok(Manager::Systemd(std::rc::Rc::new(sc))),
            Err(why) => {
                let unreachable = Unreachable {
                    launchd,
                    systemctl: sc.path.clone(),
                    why: why.to_string(),
                };
                Err(NoManager::Unreachable(unreachable))
            }
        }
    }

    /// The same run's context for another stack (`agent list`): same environment, launcher and
    /// printer; the new stack's secrets are learned too.
    pub fn for_stack(&self, name: &str) -> Result<Context, crate::error::Invalid> {
        let stack = Stack::new(name, &self.env.stack_env())?;
        self.out
            .add_secrets(crate::config::secret_values_on_disk(&stack.config_path()));
        self.out
            .add_secrets(crate::host::plist::secret_values_on_disk(
                &stack.plist_path(),
            ));
        self.out
            .add_secrets(crate::config::environment::secret_values_on_disk(
                &crate::host::declared::path(&stack),
            ));
        Ok(Context {
            stack,
            search: self.search.clone(),
            env: self.env.clone(),
            launcher: self.launcher.clone(),
            out: self.out,
            // One of several stacks (`--all`): every hint names its stack, as a plain name
            // (`oyster start dev`), the form `oyster stop dev` gives too.
            typed: Typed {
                stack: StackForm::Plain,
                ..self.typed
            },
            launchctl: Rc::clone(&self.launchctl),
            manager: Rc::clone(&self.manager),
        })
    }

    /// Who owns the console: `OYSTER_CONSOLE_UID` when set (a uid, else invalid input), else
    /// `/dev/console`'s owner on macOS, else unknown.
    pub fn console(&self) -> Result<crate::launchctl::Console, crate::error::Invalid> {
        let var = crate::launchctl::CONSOLE_VAR;
        match &self.env.console_uid {
            None => Ok(crate::launchctl::Console::of_this_machine()),
            Some(v) => match v.trim().parse::<u32>() {
                Ok(uid) => Ok(crate::launchctl::Console {
                    owner: Some(uid),
                    overridden: true,
                }),
                Err(_) => Err(ContextNote::NotAUid {
                    var,
                    value: v.clone(),
                }
                .into()),
            },
        }
    }

    /// A command to suggest, in the form the user typed ([`Hints::agent`]).
    pub fn hint_cmd(&self, verb: &str) -> String {
        self.hints().agent(verb)
    }

    /// The stack as the user gave it, to append to a suggested command ([`Hints::suffix`]).
    pub fn stack_suffix(&self) -> String {
        self.hints().suffix()
    }

    /// What domain code (direct startup, the lifecycle) needs to suggest a command in the
    /// form the user typed.
    pub fn hints(&self) -> Hints {
        Hints {
            typed: self.typed,
            stack: self.stack.name.clone(),
        }
    }

    /// Takes the stack's lifecycle lock ([`crate::host::stack::lock_dir`], docs/behaviour.md §9) for the
    /// whole run of a command that writes or loads: a second one waits, saying for whom, up to
    /// [`LOCK_WAIT`], or until it is interrupted, then fails.
    pub fn lock_stack(&self, what: &str) -> anyhow::Result<crate::sys::fs::Lock> {
        self.refuse_foreign(what)?;
        self.refuse_dangling_root()?;
        self.stack.refuse_unusable_lock_dir()?;
        let path = self.stack.lifecycle_lock_path();
        if let Some(dir) = path.parent() {
            crate::sys::fs::create_dir_all(dir, 0o700)?;
        }
        let lock = crate::sys::fs::lock_waiting(&path, what, LOCK_WAIT, |holder| {
            let note = ContextNote::Waiting {
                holder: holder.to_owned(),
                stack: self.stack.name.clone(),
                secs: LOCK_WAIT.as_secs(),
            };
            self.reporter().progress(&note.to_string())
        })?;
        Ok(lock)
    }

    /// The reporter domain code says its progress and notes through (the printer; a unit test
    /// hands in an `output::report::Recorder` instead).
    pub fn reporter(&self) -> &dyn crate::output::Reporter {
        self.out
    }

    /// Notes printed whenever an override or fallback is in effect.
    pub fn announce_overrides(&self) {
        if let Some(dir) = &self.env.managed_dir {
            self.reporter()
                .note(&ContextNote::ManagedDir(dir.clone()).to_string());
        }
        if self.stack.config_dir_overridden {
            let dir = self.stack.config_dir.clone();
            self.reporter()
                .note(&ContextNote::ConfigDir(dir).to_string());
        }
    }
}
