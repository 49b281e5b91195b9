//! Stacks and every path derived from one: config dir, run dir, log dir, label, plist, port.
//!
//! The table in CONTRACT.md "Stacks, paths and labels" lives here and nowhere else; every
//! other module asks a [`Stack`] for its paths.

use std::path::PathBuf;

use crate::error::Invalid;

/// The default stack name.
pub const DEFAULT_STACK: &str = "production";
/// The other stack whose files Oysterun names like production's (no `-NAME` suffix).
pub const STAGING_STACK: &str = "staging";
const BASE_LABEL: &str = "com.oysterun.host";

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

/// Checks a stack name: `production`, `staging`, or `[a-z][a-z0-9-]{0,31}`.
pub fn validate_name(name: &str) -> Result<(), Invalid> {
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
        Err(Invalid::new(format!(
            "invalid stack name {name:?}: use `production`, `staging`, or a name matching \
             [a-z][a-z0-9-]{{0,31}} (a lowercase letter, then up to 31 lowercase letters, digits or dashes)"
        )))
    }
}

impl Stack {
    pub fn new(name: &str, env: &StackEnv) -> Result<Stack, Invalid> {
        validate_name(name)?;
        let home = env.home.clone().ok_or_else(|| {
            Invalid::new("HOME is not set; oyster needs it to find the stack's files")
        })?;
        if !home.is_absolute() {
            return Err(Invalid::new(format!(
                "HOME is {}, which is not an absolute path",
                home.display()
            )));
        }
        for (var, value) in [
            ("OYSTERUN_STACKS_DIR", &env.stacks_dir),
            ("OYSTERUN_CONFIG_DIR", &env.config_dir),
        ] {
            if let Some(v) = value.as_ref().filter(|v| !v.is_absolute()) {
                return Err(Invalid::new(format!(
                    "{var} is {:?}, not an absolute path; launchd and the Host expand nothing, so \
                     `~` or a relative path would mean a directory relative to wherever they run",
                    v.display().to_string()
                ))
                .hint(format!("set {var} to a full path, e.g. {var}=\"$HOME/…\"")));
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

    /// The Host's pid file, named as Oysterun's scripts name it (CONTRACT.md stacks table):
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

    /// `<stack root>/matrix/homeserver.db`, the Host's Matrix storage.
    pub fn matrix_db_path(&self) -> PathBuf {
        self.root.join("matrix").join("homeserver.db")
    }

    /// `oysterun-host`, or `oysterun-host-NAME` for a custom stack (Oysterun's
    /// `configure_stack_runtime`).
    fn host_file_stem(&self) -> String {
        if self.name == DEFAULT_STACK || self.name == STAGING_STACK {
            "oysterun-host".to_owned()
        } else {
            format!("oysterun-host-{}", self.name)
        }
    }

    pub fn audit_path(&self) -> PathBuf {
        self.log_dir.join("service-control.jsonl")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env() -> StackEnv {
        StackEnv {
            home: Some("/h".into()),
            ..Default::default()
        }
    }

    #[test]
    fn table_rows() {
        let p = Stack::new("production", &env()).unwrap();
        assert_eq!(p.config_path(), Path::new("/h/.oysterun/config.json"));
        assert_eq!(p.run_dir, Path::new("/h/.oysterun/run"));
        assert_eq!(
            p.log_path(),
            Path::new("/h/.oysterun/logs/oysterun-host.log")
        );
        assert_eq!(
            p.plist_path(),
            Path::new("/h/Library/LaunchAgents/com.oysterun.host.plist")
        );
        assert_eq!(p.default_port, Some(8802));
        assert_eq!(p.root, Path::new("/h/.oysterun"));
        assert_eq!(
            p.pid_path(),
            Path::new("/h/.oysterun/run/oysterun-host.pid")
        );
        assert_eq!(
            p.origin_path(),
            Path::new("/h/.oysterun/run/oysterun-host.origin.tsv")
        );
        assert_eq!(
            p.matrix_db_path(),
            Path::new("/h/.oysterun/matrix/homeserver.db")
        );

        let s = Stack::new("staging", &env()).unwrap();
        assert_eq!(s.root, Path::new("/h/.oysterun-stacks/staging"));
        assert_eq!(
            s.pid_path(),
            Path::new("/h/.oysterun-stacks/staging/run/oysterun-host.pid")
        );
        assert_eq!(s.config_dir, Path::new("/h/.oysterun-stacks/staging/host"));
        assert_eq!(s.label, "com.oysterun.host.staging");
        assert_eq!(s.default_port, Some(9902));

        let mut e = env();
        e.stacks_dir = Some("/s".into());
        let c = Stack::new("dev-2", &e).unwrap();
        assert_eq!(c.log_dir, Path::new("/s/dev-2/logs"));
        assert_eq!(c.root, Path::new("/s/dev-2"));
        assert_eq!(
            c.pid_path(),
            Path::new("/s/dev-2/run/oysterun-host-dev-2.pid")
        );
        assert_eq!(
            c.origin_path(),
            Path::new("/s/dev-2/run/oysterun-host-dev-2.origin.tsv")
        );
        assert_eq!(
            c.matrix_db_path(),
            Path::new("/s/dev-2/matrix/homeserver.db")
        );
        assert_eq!(c.default_port, None);
    }

    #[test]
    fn config_dir_override_changes_only_the_config_dir() {
        let mut e = env();
        e.config_dir = Some("/cfg".into());
        let p = Stack::new("production", &e).unwrap();
        assert_eq!(p.config_path(), Path::new("/cfg/config.json"));
        assert!(p.config_dir_overridden);
        assert_eq!(p.run_dir, Path::new("/h/.oysterun/run"));
        assert_eq!(p.root, Path::new("/h/.oysterun"), "the stack root stays");
    }

    #[test]
    fn names() {
        for ok in ["production", "staging", "a", "dev-2", &"a".repeat(32)] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "2a",
            "-a",
            "A",
            "a_b",
            "a/b",
            "..",
            &"a".repeat(33),
            "a b",
        ] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
