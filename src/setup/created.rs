//! What setup may create that did not exist before it, so a rollback removes exactly that.

use std::path::{Path, PathBuf};

use super::SetupPlan;
use crate::context::Context;

/// Files and directories setup may create that did not exist before it.
pub(super) struct Created {
    pub(super) files: Vec<PathBuf>,
    pub(super) dirs: Vec<PathBuf>,
}

impl Created {
    /// This list (taken before the stack's lock) narrowed to what the lock created, the lock
    /// file and the run directory's chain, joined with `now` (what may still be created,
    /// listed under the lock).
    pub(super) fn made_by_lock(self, st: &crate::host::stack::Stack, now: Created) -> Created {
        let Created {
            mut files,
            mut dirs,
        } = now;
        let lock = st.lifecycle_lock_path();
        files.extend(self.files.into_iter().filter(|f| *f == lock && f.exists()));
        dirs.extend(
            self.dirs
                .into_iter()
                .filter(|d| st.run_dir.starts_with(d) && d.exists()),
        );
        // Deepest first, so parents empty out before their turn.
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        dirs.dedup();
        Created { files, dirs }
    }
}

/// What setup's steps may create: the directory chains under HOME and the lock and pid files.
pub(super) fn created_paths(ctx: &Context, sp: &SetupPlan) -> Created {
    let st = &ctx.stack;
    let mut files: Vec<PathBuf> = vec![
        st.config_lock_path(),
        st.pid_path(),
        st.origin_path(),
        st.exec_record_path(),
        st.pid_lock_path(),
        st.node_version_cache_path(),
        crate::host::privacy::verified_node_path(&st.run_dir),
        st.lifecycle_lock_path(),
        st.pending_path(),
        st.last_good_plist_path(),
    ];
    files.retain(|f| !f.exists());
    let mut dirs = vec![];
    for leaf in [
        st.config_dir.clone(),
        sp.agent_folder.clone(),
        st.plist_path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        st.run_dir.clone(),
        st.matrix_db_path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    ] {
        let mut d = leaf.as_path();
        while !d.exists() && d.starts_with(&st.home) && d != st.home {
            dirs.push(d.to_path_buf());
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
    }
    // Deepest first, so parents empty out before their turn.
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    Created { files, dirs }
}

/// Whether the stack directory holds nothing but the lifecycle lock (and the directories on
/// its way): what taking the lock created, nothing of anybody else's.
pub(super) fn holds_only_the_lock(st: &crate::host::stack::Stack) -> bool {
    fn only(dir: &Path, lock: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().all(|e| {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => lock.starts_with(&p) && only(&p, lock),
                Ok(_) => p == lock,
                Err(_) => false,
            }
        })
    }
    st.root.starts_with(&st.home) && st.root != st.home && only(&st.root, &st.lifecycle_lock_path())
}
