//! The words of `sys/`: the file reader's refusals, locks, users, processes, a log's cut line.

use std::fmt::{self, Display, Formatter};

use crate::sys::tail::LineCut;
use crate::sys::trusted::Why;

impl Display for LineCut {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            LineCut::Began { max, rest } => {
                write!(f, "[line cut: it began more than {max} bytes back] …{rest}")
            }
            LineCut::NotShown { max } => write!(
                f,
                "[one line longer than {max} bytes, with no space in its last {max}; not shown]"
            ),
        }
    }
}

impl Display for Why {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // `uid 501 (alice)`, or `uid 501` without a name.
        let uid_named = |uid: u32| {
            let name = crate::sys::user::name_of(uid)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            format!("uid {uid}{name}")
        };
        match self {
            Why::Unresolvable { cause } => write!(f, "cannot be resolved ({cause})"),
            Why::Uninspectable { cause } => write!(f, "cannot be inspected ({cause})"),
            Why::LinkInSharedDir { uid } => write!(
                f,
                "is a symlink that {} owns in a directory others may write, so it can point it at another program",
                uid_named(*uid)
            ),
            Why::NotRoots { uid } => write!(f, "belongs to {}, not root", uid_named(*uid)),
            Why::Writable { who, mode } => write!(f, "is writable by {who} (mode {mode:04o})"),
        }
    }
}
