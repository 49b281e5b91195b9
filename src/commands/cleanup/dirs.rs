//! The directories cleanup removes through: real directories of the user running it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::host::stack::Stack;

/// The stack directory and the stacks directory above it (`~/.oysterun-stacks`, or
/// `OYSTERUN_STACKS_DIR`) are real directories: cleanup never removes anything through a
/// symlink, which would reach files outside the stack wherever it points. And they are the
/// user's own (the stacks directory may be root's, or shared with the sticky bit): a directory
/// another uid owns or may write is one whose owner can swap a part of it for a link between
/// cleanup's look and its removal — root running cleanup with a HOME any user may write (`/tmp`)
/// would then remove what the link reaches.
pub(super) fn no_link_on_the_way(stack: &Stack) -> Result<(), String> {
    let parent = stack.root.parent().filter(|p| *p != stack.home);
    for (dir, is_stack) in
        std::iter::once((stack.root.as_path(), true)).chain(parent.map(|p| (p, false)))
    {
        let Ok(m) = std::fs::symlink_metadata(dir) else {
            continue;
        };
        if m.file_type().is_symlink() {
            return Err(format!(
                "{} is a symlink (to {}); cleanup removes nothing through it",
                dir.display(),
                std::fs::read_link(dir)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into())
            ));
        }
        not_anothers(dir, &m, is_stack)?;
    }
    Ok(())
}

/// `dir` belongs to the user running cleanup (the stacks directory: or to root) and no one
/// else may write it (the stacks directory: unless it is sticky, where only an entry's owner
/// may rename it).
fn not_anothers(dir: &Path, m: &std::fs::Metadata, is_stack: bool) -> Result<(), String> {
    let euid = crate::sys::user::euid();
    let owner = m.uid();
    if owner != euid && (is_stack || owner != 0) {
        let name = crate::sys::user::name_of(owner).unwrap_or_else(|| format!("uid {owner}"));
        return Err(format!(
            "{} belongs to {name}, not to the user running cleanup (uid {euid}); cleanup removes nothing of another user's",
            dir.display()
        ));
    }
    let mode = m.mode() & 0o7777;
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && (is_stack || !sticky) {
        return Err(format!(
            "{} may be written by others (mode {mode:04o}), who could swap a part of it for a link; cleanup removes nothing through it",
            dir.display()
        ));
    }
    Ok(())
}
