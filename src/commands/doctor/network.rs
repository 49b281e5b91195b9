//! `doctor`'s Local Network privacy check (issue 39 item 8): where launchd runs the Host
//! (macOS, or a launchctl set in the environment), an address on the local network that the
//! Host's config names may be unreachable from it on macOS 15 and later (Apple TN3179): a
//! program launchd starts that is not an app gets "No route to host" there until the user
//! allows it. oyster cannot ask, so it says so, once, with every such address.

use super::{check, Check, Level};
use crate::config::ConfigDoc;
use crate::context::Context;

pub(super) fn local_network_check(ctx: &Context, doc: Option<&ConfigDoc>) -> Option<Check> {
    let doc = doc?;
    let launchd = match ctx.env.launchctl.as_deref() {
        Some(v) => v != "none",
        None => cfg!(target_os = "macos"),
    };
    if !launchd {
        return None;
    }
    let found = crate::host::lan::lan_addresses(doc.value());
    if found.is_empty() {
        return None;
    }
    // Before macOS 15 there is no Local Network privacy for such a program.
    let version = crate::host::lan::macos_version();
    if version.is_some_and(|(major, _)| major < 15) {
        return None;
    }
    let names: Vec<String> = found
        .iter()
        .map(|f| format!("{} ({})", f.key, f.host))
        .collect();
    let when = match version {
        Some((major, minor)) => format!("this Mac runs macOS {major}.{minor}, and from macOS 15"),
        None => "from macOS 15".to_owned(),
    };
    Some(check(
        "local network",
        Level::Warn,
        format!(
            "the config names addresses on the local network: {}; {when} a program launchd starts that is not an app may not reach the local network until it is allowed (Local Network privacy, Apple TN3179: \"No route to host\", while the same Host run from Terminal reaches it)",
            names.join(", ")
        ),
        Some(
            "if the Host cannot reach them, allow it under System Settings → Privacy & Security → Local Network (the program is listed once it has asked), or name a host that is not on the local network".to_owned(),
        ),
    ))
}
