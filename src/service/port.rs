//! Who holds the Host's port before anything is loaded: this stack's own Host (in either
//! domain), another process (seen in two listings in a row), or one oyster cannot see.

use crate::verify;

/// Who holds `port` (before anything is loaded): free, or this stack's own Host (`ours`: its
/// pids wherever the manager runs them, and their children), another process (named, with its
/// oyster stack when it is one), one oyster cannot see, or unknown (the listing failed, said on
/// `out`).
pub fn holder(port: u16, ours: &[u32], out: &dyn crate::output::Reporter) -> super::PortHolder {
    {
        use super::PortHolder;
        let is_ours = |pid: u32| ours.iter().any(|c| crate::sys::net::descends_from(pid, *c));
        let mut verdict = check_port(port, crate::sys::net::listeners_on, is_ours, port_in_use);
        // A socket no process shows but that cannot be bound is also one being closed right
        // now (our old Host going away): only one that stays so for a second is another's.
        for _ in 0..10 {
            if !matches!(verdict, PortCheck::Invisible) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            verdict = check_port(port, crate::sys::net::listeners_on, is_ours, port_in_use);
        }
        match verdict {
            PortCheck::Free => PortHolder::Free,
            PortCheck::Unknown(e) => {
                out.note(&format!("could not list who listens on port {port}: {e}"));
                PortHolder::Unknown(e)
            }
            PortCheck::Invisible => PortHolder::Invisible,
            PortCheck::Foreign(h) => PortHolder::Foreign {
                stack: verify::inspect(h.pid).and_then(|p| {
                    p.var("OYSTERUN_ROUTEC_STACK_NAME")
                        .or_else(|| p.var("OYSTERUN_CONFIG_DIR"))
                }),
                pid: h.pid,
                name: h.name,
            },
        }
    }
}

/// Who holds a port, as far as the refusal before loading is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortCheck {
    /// Nobody, or this stack's own Host.
    Free,
    /// A process that is not this stack's Host, seen in two listings in a row.
    Foreign(crate::sys::net::Holder),
    /// No visible socket, yet the port cannot be bound: another user's process (the kernel
    /// hides other uids' sockets from a normal user on macOS).
    Invisible,
    /// The listing failed: said, not refused.
    Unknown(String),
}

/// Decides who holds `port`. A foreign holder is refused only when a second listing shows the
/// same pid again: on macOS the `listeners` crate can report a holder from a descriptor closed
/// between two calls (it checks `proc_pidfdinfo` for `< 0`, while libproc returns 0 on failure,
/// and then reads a struct that was never filled). When nobody visible holds it, a bind says
/// whether someone invisible does.
pub fn check_port(
    port: u16,
    list: impl Fn(u16) -> Result<Vec<crate::sys::net::Holder>, String>,
    ours: impl Fn(u32) -> bool,
    in_use: impl Fn(u16) -> bool,
) -> PortCheck {
    let first = match list(port) {
        Ok(h) => h,
        Err(e) => return PortCheck::Unknown(e),
    };
    if first.is_empty() {
        return if in_use(port) {
            PortCheck::Invisible
        } else {
            PortCheck::Free
        };
    }
    let foreign: Vec<_> = first.into_iter().filter(|h| !ours(h.pid)).collect();
    if foreign.is_empty() {
        return PortCheck::Free;
    }
    let again = list(port).unwrap_or_else(|_| foreign.clone());
    match foreign
        .into_iter()
        .find(|h| again.iter().any(|a| a.pid == h.pid))
    {
        Some(h) => PortCheck::Foreign(h),
        None if again.is_empty() && in_use(port) => PortCheck::Invisible,
        None => PortCheck::Free,
    }
}

/// Whether binding the port the way the Host does (`server.listen(PORT)`: the dual-stack
/// wildcard, IPv4's when IPv6 is not available) fails with "address in use".
pub fn port_in_use(port: u16) -> bool {
    let in_use = |addr: &str| {
        matches!(
            std::net::TcpListener::bind(addr),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse
        )
    };
    match std::net::TcpListener::bind(("::", port)) {
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => true,
        Err(_) => in_use(&format!("0.0.0.0:{port}")),
    }
}
