//! The declared environment in `status` (docs/behaviour.md "Declared environment"): which
//! variables the Host gets (names), why the user's file is not used, and a Host started
//! before they changed, called stale until a restart.

use super::{AgentStatus, StatusNote};
use crate::context::Context;
use crate::host::declared::{self, Declared};
use crate::host::plist::Installed;

/// The stack's declared variables: their names in `st`, and what is wrong with the file in
/// its notes.
pub(super) fn note(ctx: &Context, st: &mut AgentStatus) -> Declared {
    let d = declared::effective(&ctx.stack, &crate::host::plan::managed(ctx));
    st.declared = d.names();
    st.notes.extend(d.problems());
    d
}

/// The installed plist's environment with the declared variables the launch program adds:
/// what the Host it starts runs with.
pub(super) fn expecting(inst: &Installed, d: &Declared) -> Installed {
    let mut inst = inst.clone();
    inst.env.declared.clone_from(&d.vars);
    inst
}

/// A Host whose declared variables are not the ones declared now: said, with the restart.
pub(super) fn stale(st: &mut AgentStatus, names: Vec<String>) {
    if names.is_empty() {
        return;
    }
    // The restart as typed for this stack (the default stack needs no name).
    let mut restart = vec!["oyster", "restart"];
    if st.stack != crate::host::stack::DEFAULT_STACK {
        restart.push(&st.stack);
    }
    let restart = restart.join(" ");
    st.note(StatusNote::DeclaredStale {
        names: names.clone(),
        restart,
    });
    st.declared_stale = names;
}
