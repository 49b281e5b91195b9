//! What setup may create that did not exist before it, so a rollback removes exactly that.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SetupPlan;
use crate::context::Context;

/// Files and directories setup may create that did not exist before it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Created {
    pub(super) files: Vec<PathBuf>,
    pub(super) dirs: Vec<PathBuf>,
}

/// The files setup's steps may create.
fn candidate_files(ctx: &Context) -> Vec<PathBuf> {
    let st = &ctx.stack;
    vec![
        st.config_lock_path(),
        st.pid_path(),
        st.origin_path(),
        st.exec_record_path(),
        st.pid_lock_path(),
        st.node_version_cache_path(),
        crate::host::privacy::verified_node_path(&st.run_dir),
        st.pending_path(),
        st.last_good_plist_path(),
    ]
}

/// The deepest directories setup's steps may create, each with the chain above it up to HOME.
fn leaves(ctx: &Context, agent_folder: &Path) -> Vec<PathBuf> {
    let st = &ctx.stack;
    let parent = |p: PathBuf| p.parent().map(Path::to_path_buf).unwrap_or_default();
    vec![
        st.config_dir.clone(),
        agent_folder.to_path_buf(),
        parent(st.plist_path()),
        // The systemd unit's directory, under systemd (the plist's otherwise).
        parent(crate::manager::definition(ctx)),
        st.run_dir.clone(),
        parent(st.matrix_db_path()),
    ]
}

/// What setup's steps may create: the directory chains under HOME and the lock and pid files.
pub(super) fn created_paths(ctx: &Context, sp: &SetupPlan) -> Created {
    let st = &ctx.stack;
    let mut files = candidate_files(ctx);
    files.retain(|f| !f.exists());
    let mut dirs = vec![];
    for leaf in leaves(ctx, &sp.agent_folder) {
        let mut d = leaf.as_path();
        while !d.exists() && d.starts_with(&st.home) && d != st.home {
            dirs.push(d.to_path_buf());
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
    }
    // Deepest first, so parents empty out before their turn; each once (chains share parents).
    dirs.sort_by(|a, b| (b.components().count(), a).cmp(&(a.components().count(), b)));
    dirs.dedup();
    Created { files, dirs }
}

/// Whether `path`, under `home`, is reached through no symlink below HOME (a link swapped in
/// would point a removal elsewhere).
fn no_link_below(home: &Path, path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix(home) else {
        return false;
    };
    let mut at = home.to_path_buf();
    rest.components().all(|c| {
        at.push(c);
        !std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
    })
}

impl Created {
    /// Removes what is there of it (directories only while empty, and reached through no
    /// symlink below `home`); how many went.
    pub(super) fn remove(&self, home: &Path) -> usize {
        let mut removed = 0;
        for f in self.files.iter().filter(|f| f.exists()) {
            removed += usize::from(std::fs::remove_file(f).is_ok());
        }
        for d in self.dirs.iter().filter(|d| no_link_below(home, d)) {
            removed += usize::from(std::fs::remove_dir(d).is_ok());
        }
        removed
    }

    /// Whether a receipt's list names only what setup may create on this stack: its own files,
    /// and directories of the chains above the ones its steps make (`agent_folder`'s among
    /// them), under HOME, reached through no symlink.
    pub(super) fn within(&self, ctx: &Context, agent_folder: &Path) -> bool {
        let files = candidate_files(ctx);
        let home = &ctx.stack.home;
        let leaves = leaves(ctx, agent_folder);
        let up = std::path::Component::ParentDir;
        self.files.iter().all(|f| files.contains(f))
            && self.dirs.iter().all(|d| {
                d.starts_with(home)
                    && d != home
                    && !d.components().any(|c| c == up)
                    && leaves.iter().any(|l| l.starts_with(d))
                    && no_link_below(home, d)
            })
    }
}
