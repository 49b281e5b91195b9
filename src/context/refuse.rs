//! What a writing command refuses about where it would write, before it takes the stack's
//! lock: a HOME or a stack another uid owns, a stack directory that is a link to nothing.

use std::path::PathBuf;

use super::Context;

/// Why a writing command refuses where it would write. Words (and hints):
/// `commands/words/context.rs`; `what` is the verb as typed, `stack` the stack as the command
/// line names it (`stack_suffix`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhereRefusal {
    /// The stack directory is a symlink to `to`, which does not exist.
    DanglingRoot { root: PathBuf, to: PathBuf },
    /// HOME is another uid's (`owner`) than the one oyster runs as.
    ForeignHome {
        home: PathBuf,
        owner: u32,
        euid: u32,
        what: String,
        stack: String,
    },
    /// The stack's directory (or its config directory, or the one above) is another uid's.
    ForeignStack {
        dir: PathBuf,
        owner: u32,
        euid: u32,
        what: String,
        stack: String,
    },
}

impl Context {
    /// A stack directory that is a symlink whose target is gone (moved or removed by hand):
    /// creating the run's directories through it fails with a bare "File exists". Named with
    /// the fix instead, before anything changes.
    pub(super) fn refuse_dangling_root(&self) -> anyhow::Result<()> {
        let root = &self.stack.root;
        let dangling = std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink())
            && std::fs::metadata(root).is_err();
        if !dangling {
            return Ok(());
        }
        let to = std::fs::read_link(root).unwrap_or_default();
        let refusal = WhereRefusal::DanglingRoot {
            root: root.clone(),
            to,
        };
        Err(crate::error::Failed::from(refusal).into())
    }

    /// [`Context::refuse_foreign_home`], then [`Context::refuse_foreign_stack`]: what every
    /// writing verb refuses before it waits, asks or writes — and its `--dry-run`, which says
    /// the refusal the run would.
    pub fn refuse_foreign(&self, what: &str) -> Result<(), crate::error::Invalid> {
        self.refuse_foreign_home(what)?;
        self.refuse_foreign_stack(what)
    }

    /// docs/behaviour.md §5: a HOME owned by another uid than the effective one (a `sudo` that kept
    /// HOME) would leave files the user can no longer read; refuse before writing anything.
    pub fn refuse_foreign_home(&self, what: &str) -> Result<(), crate::error::Invalid> {
        let euid = crate::sys::user::euid();
        let Some(owner) = crate::sys::user::owner_of(&self.stack.home) else {
            return Ok(());
        };
        if owner == euid {
            return Ok(());
        }
        Err(WhereRefusal::ForeignHome {
            home: self.stack.home.clone(),
            owner,
            euid,
            what: what.to_owned(),
            stack: self.stack_suffix(),
        }
        .into())
    }

    /// A stack whose directory (or config directory) another uid owns — root, or another user,
    /// with `OYSTERUN_STACKS_DIR`/`OYSTERUN_CONFIG_DIR` pointing into someone else's stacks: a
    /// writing verb is refused (exit 2) as under a foreign HOME. It would leave files there the
    /// owner cannot use, and its lock would not exclude the owner's own oyster (each user's
    /// lifecycle locks live in their own HOME).
    pub fn refuse_foreign_stack(&self, what: &str) -> Result<(), crate::error::Invalid> {
        let euid = crate::sys::user::euid();
        // A stack not created yet is created in the directory above it (OYSTERUN_STACKS_DIR):
        // one another uid owns would get a stack of this uid's, which its owner's oyster
        // cannot use. HOME is refuse_foreign_home's; a sticky directory (/tmp) is everyone's.
        let above = self
            .stack
            .root
            .parent()
            .filter(|_| std::fs::symlink_metadata(&self.stack.root).is_err())
            .filter(|p| *p != self.stack.home)
            .filter(|p| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o1000 == 0)
            })
            .map(std::path::Path::to_path_buf);
        for dir in [&self.stack.root, &self.stack.config_dir]
            .into_iter()
            .chain(above.as_ref())
        {
            let Some(owner) = crate::sys::user::owner_of(dir) else {
                continue;
            };
            if owner == euid {
                continue;
            }
            return Err(WhereRefusal::ForeignStack {
                dir: dir.clone(),
                owner,
                euid,
                what: what.to_owned(),
                stack: self.stack_suffix(),
            }
            .into());
        }
        Ok(())
    }
}
