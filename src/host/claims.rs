//! The ports other stacks of this user hold claim to: every stack whose job is installed (its
//! plist, or its systemd unit file), running or stopped, with the port it runs on by the one
//! rule (its config, else its installed plist, else its default). Read-only.

use std::path::PathBuf;

use super::plan::HostInputs;
use super::stack::{discover, Stack, StackEnv};
use crate::config::ConfigDoc;

/// `(stack, port)` for every stack but `this` whose job is installed; `unit_of` names a
/// stack's unit file under systemd (`None` elsewhere).
pub fn ports(
    env: &StackEnv,
    this: &str,
    unit_of: &dyn Fn(&Stack) -> Option<PathBuf>,
    out: &dyn crate::output::Reporter,
) -> Vec<(String, u16)> {
    discover(env)
        .into_iter()
        .filter(|name| name != this)
        .filter_map(|name| {
            let stack = Stack::new(&name, env).ok()?;
            let plist = stack.plist_path();
            if !plist.exists() && !unit_of(&stack).is_some_and(|u| u.exists()) {
                return None;
            }
            let installed = super::plist::read_installed(&plist, out);
            let config = ConfigDoc::load(&stack.config_path()).ok();
            let port = HostInputs::default()
                .effective_port(&stack, config.as_ref(), installed.as_ref())?
                .port;
            Some((name, port))
        })
        .collect()
}
