//! The per-run context: the stack, the environment oyster reads (captured once), where
//! resolution searches, and the printer. Built once by `lib.rs`, passed down to every command.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::host::stack::{Stack, StackEnv};
use crate::output::printer::{printer, Printer};
use crate::provider::resolve::Search;

/// Every environment variable oyster reads, captured once at start (documented in `--help`'s
/// ENVIRONMENT section). Nothing below reads `std::env` again, so a run sees one consistent
/// environment and tests can see exactly what oyster was given.
#[derive(Debug, Clone, Default)]
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

/// What every command starts from.
pub struct Context {
    pub stack: Stack,
    pub search: Search,
    /// `--port`, recorded in the stack's config by commands that sync it.
    pub port: Option<u16>,
    pub env: EnvSnapshot,
    /// The stable path oyster runs as (`host::launcher`): what launchd and direct startup run
    /// as the Host's launch program, `<oyster> host exec --stack NAME`.
    pub launcher: PathBuf,
    pub out: &'static Printer,
}

impl Context {
    /// Builds the context for `stack`; the printer learns the home directory and the secret
    /// values in the stack's config, so no output can show them. `argv0` is how oyster was
    /// invoked (it decides the launcher path).
    pub fn new(
        stack_name: &str,
        port: Option<u16>,
        env: EnvSnapshot,
        argv0: Option<&OsStr>,
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
        let out = printer();
        out.set_home(&stack.home);
        out.add_secrets(crate::config::secret_values_on_disk(&stack.config_path()));
        out.add_secrets(crate::host::plist::secret_values_on_disk(
            &stack.plist_path(),
        ));
        Ok(Context {
            stack,
            search,
            port,
            env,
            launcher,
            out,
        })
    }

    /// Notes printed whenever an override or fallback is in effect.
    pub fn announce_overrides(&self) {
        if self.stack.config_dir_overridden {
            self.out.note(&format!(
                "OYSTERUN_CONFIG_DIR is set; using {} as the config dir",
                self.stack.config_dir.display()
            ));
        }
    }
}
