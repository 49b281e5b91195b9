//! What a writing command refuses about where it would write, before it takes the stack's
//! lock: a HOME or a stack another uid owns, a stack directory that is a link to nothing.

use super::Context;

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
        Err(crate::error::Failed::new(
            format!(
                "the stack directory {} is a symlink to {}, which does not exist; nothing was changed",
                root.display(),
                to.display()
            ),
            format!(
                "remove the link (`rm {}`) or restore its target, then run the command again",
                root.display()
            ),
        )
        .into())
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
        let known = crate::sys::user::name_of(owner);
        // sudo takes a uid without an account as `#UID` (quoted: `#` starts a shell comment).
        let (name, sudo_user) = match known {
            Some(n) => (n.clone(), n),
            None => (format!("uid {owner}"), format!("'#{owner}'")),
        };
        Err(crate::error::Invalid::new(format!(
            "HOME ({}) belongs to {name}, but oyster runs as uid {euid}; `{what}` would leave files there that {name} cannot use",
            self.stack.home.display()
        ))
        .hint(format!(
            "run it as {name}, without sudo: `oyster {what}{stack}`, or `sudo -u {sudo_user} -H oyster {what}{stack}`",
            stack = self.stack_suffix()
        )))
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
            // sudo takes a uid without an account as `#UID` (quoted: `#` starts a comment).
            let (name, sudo_user) = match crate::sys::user::name_of(owner) {
                Some(n) => (n.clone(), n),
                None => (format!("uid {owner}"), format!("'#{owner}'")),
            };
            return Err(crate::error::Invalid::new(format!(
                "{} belongs to {name}, but oyster runs as uid {euid}; `{what}` would write there, and {name}'s own oyster would not wait for it",
                dir.display()
            ))
            .hint(format!(
                "run it as {name}, with the same OYSTERUN_STACKS_DIR: `sudo -u {sudo_user} -H oyster {what}{}`",
                self.stack_suffix()
            )));
        }
        Ok(())
    }
}
