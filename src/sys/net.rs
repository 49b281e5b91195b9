//! Who listens on a TCP port, through the `listeners` crate (`/proc/net/tcp{,6}` and each
//! process's fds on Linux, `proc_pidfdinfo` socket info on macOS). The real Host listens with
//! `server.listen(PORT)`: one dual-stack `::` socket that also serves 127.0.0.1, so any
//! listening address on the port counts.

use std::collections::BTreeSet;

/// A process holding a listening socket.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Holder {
    pub pid: u32,
    pub name: String,
}

/// Every process with a TCP socket listening on `port` (any address, IPv4 or IPv6).
///
/// # Platform
/// Sockets of processes this user may not inspect are not seen (another user's process on
/// macOS without root); the caller treats "nobody" as "nobody we can see".
pub fn listeners_on(port: u16) -> Result<Vec<Holder>, String> {
    let all = listeners::get_all().map_err(|e| e.to_string())?;
    let set: BTreeSet<Holder> = all
        .into_iter()
        .filter(|l| {
            l.protocol == listeners::Protocol::TCP
                && l.socket.port() == port
                && l.state == listeners::SocketState::Listen
        })
        .map(|l| Holder {
            pid: l.process.pid,
            name: l.process.name,
        })
        .collect();
    Ok(set.into_iter().collect())
}

/// Whether nobody listens on `port`, asked the cheap way (two binds, no process table): the
/// Host's own bind (the dual-stack wildcard `::`, IPv4's `0.0.0.0` where IPv6 is missing) and
/// the loopback address `/health` is asked on (`127.0.0.1`). Both succeed only when no socket
/// listens there: std sets `SO_REUSEADDR`, so a closing connection (`TIME_WAIT`) does not
/// count, and binding the exact address also catches a listener on `127.0.0.1` alone, which
/// BSD lets a wildcard bind coexist with. `false` means "held by someone": who is a question for
/// [`listeners_on`].
pub fn port_bindable(port: u16) -> bool {
    use std::net::TcpListener;
    let wildcard = match TcpListener::bind(("::", port)) {
        Ok(l) => Some(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => return false,
        Err(_) => match TcpListener::bind(("0.0.0.0", port)) {
            Ok(l) => Some(l),
            Err(_) => return false,
        },
    };
    drop(wildcard);
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Whether `pid` is `ancestor` or one of its descendants.
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut sys = sysinfo::System::new();
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::All,
        true,
        sysinfo::ProcessRefreshKind::nothing(),
    );
    let mut cur = Some(sysinfo::Pid::from_u32(pid));
    for _ in 0..64 {
        match cur {
            Some(p) if p.as_u32() == ancestor => return true,
            Some(p) => cur = sys.process(p).and_then(|proc_| proc_.parent()),
            None => return false,
        }
    }
    false
}
