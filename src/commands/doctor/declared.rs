//! doctor's checks of the declared environment (`oyster env`), without a network: the file is
//! used (a regular file of the user's, not writable by others), `NODE_EXTRA_CA_CERTS` names a
//! readable PEM file, a proxy variable is a URL, and `NO_PROXY` keeps the Host's own
//! `127.0.0.1`/`localhost` off the proxy. Names only: no row shows a value. No row at all for
//! a stack that declares nothing.

use std::os::unix::fs::PermissionsExt;

use super::{check, Check, Level};
use crate::context::Context;
use crate::host::declared::{self, Declared};

/// The proxy variables Node, npm and the providers read: the first six setup notices.
const PROXIES: &[&str] = crate::context::NOTICED.split_at(6).0;

pub(super) fn declared_checks(ctx: &Context) -> (Vec<Check>, Vec<String>) {
    let d = declared::effective(&ctx.stack, &crate::host::plan::managed(ctx));
    let mut checks = vec![];
    if let Some(c) = file_check(ctx, &d) {
        checks.push(c);
    }
    checks.extend(ca_check(&d));
    checks.extend(proxy_checks(ctx, &d));
    (checks, d.names())
}

fn file_check(ctx: &Context, d: &Declared) -> Option<Check> {
    if let Some(r) = &d.refused {
        return Some(check(
            "declared environment",
            Level::Fail,
            format!("{r}; the Host starts without any of it"),
            Some(r.fix()),
        ));
    }
    if !d.left_out.is_empty() {
        return Some(check(
            "declared environment",
            Level::Warn,
            format!("{}: {}", d.file.display(), d.left_out.join("; ")),
            Some(format!(
                "correct those lines, or declare them again with `{}`",
                ctx.hints().flag_cmd("env set NAME VALUE")
            )),
        ));
    }
    let mode = std::fs::symlink_metadata(&d.file)
        .ok()
        .map(|m| m.permissions().mode() & 0o777);
    if mode.is_some_and(|m| m & 0o044 != 0) {
        return Some(check(
            "declared environment",
            Level::Warn,
            format!(
                "{} holds secrets and is readable by others (mode {:04o})",
                d.file.display(),
                mode.unwrap_or(0)
            ),
            Some(format!("chmod 600 {}", d.file.display())),
        ));
    }
    if d.vars.is_empty() {
        return None;
    }
    let forced = d.forced.len();
    Some(check(
        "declared environment",
        Level::Ok,
        format!(
            "{} declared ({}){}; values not shown",
            d.vars.len(),
            d.names().join(", "),
            if forced > 0 {
                format!(", {forced} forced by your organization")
            } else {
                String::new()
            }
        ),
        None,
    ))
}

/// `NODE_EXTRA_CA_CERTS` names a readable file holding a PEM certificate (Node ignores one it
/// cannot read, with a warning in the Host log only).
fn ca_check(d: &Declared) -> Option<Check> {
    let name = "NODE_EXTRA_CA_CERTS";
    let value = d.vars.get(name)?;
    let path = std::path::Path::new(value);
    let problem = if !path.is_absolute() {
        Some("is not an absolute path (the Host runs in its own directory)")
    } else {
        match crate::sys::fs::read_head(path, 1 << 20) {
            None => Some("does not name a readable regular file"),
            Some(b) if !String::from_utf8_lossy(&b).contains("-----BEGIN CERTIFICATE-----") => {
                Some("names a file with no PEM certificate (`-----BEGIN CERTIFICATE-----`) in it")
            }
            Some(_) => None,
        }
    };
    Some(match problem {
        None => check(
            "CA certificates",
            Level::Ok,
            format!("{name} names a readable PEM file"),
            None,
        ),
        Some(why) => check(
            "CA certificates",
            Level::Fail,
            format!("{name} {why}; Node then trusts only its own CAs"),
            Some(format!(
                "`oyster env set {name} /absolute/path/to/ca-bundle.pem`"
            )),
        ),
    })
}

/// Each proxy variable is a URL; with any proxy set, `NO_PROXY` names `127.0.0.1` and
/// `localhost` (else the Host's own `/health` check and local tools go through the proxy).
fn proxy_checks(ctx: &Context, d: &Declared) -> Vec<Check> {
    let mut checks = vec![];
    let set: Vec<&str> = PROXIES
        .iter()
        .copied()
        .filter(|n| d.vars.contains_key(*n))
        .collect();
    for name in &set {
        if let Err(why) = proxy_url(&d.vars[*name]) {
            checks.push(check(
                "proxy",
                Level::Fail,
                format!("{name} is not a proxy URL: {why}"),
                Some(format!(
                    "`{}` with a URL such as http://proxy.example:3128",
                    ctx.hints()
                        .flag_cmd(&format!("env set {name} --value-stdin"))
                )),
            ));
        }
    }
    if set.is_empty() {
        return checks;
    }
    let no_proxy = d
        .vars
        .get("NO_PROXY")
        .or_else(|| d.vars.get("no_proxy"))
        .map(String::as_str)
        .unwrap_or("");
    let entries: Vec<&str> = no_proxy.split(',').map(str::trim).collect();
    let missing: Vec<&str> = ["127.0.0.1", "localhost"]
        .into_iter()
        .filter(|h| !entries.contains(h) && !entries.contains(&"*"))
        .collect();
    if missing.is_empty() {
        checks.push(check(
            "proxy",
            Level::Ok,
            format!(
                "{} set; NO_PROXY keeps 127.0.0.1 and localhost off it",
                set.join(", ")
            ),
            None,
        ));
    } else {
        checks.push(check(
            "proxy",
            Level::Warn,
            format!(
                "{} set, but NO_PROXY does not name {}: the Host's own /health check and local tools would go through the proxy",
                set.join(", "),
                missing.join(" or ")
            ),
            Some(format!(
                "`{}` (and the hosts you already exempt)",
                ctx.hints().flag_cmd("env set NO_PROXY 127.0.0.1,localhost")
            )),
        ));
    }
    checks
}

/// Why `value` is not a proxy URL (`scheme://host[:port][/]`), in words without the value.
fn proxy_url(value: &str) -> Result<(), &'static str> {
    let (scheme, rest) = value
        .split_once("://")
        .ok_or("no scheme (it must start with http://, https:// or socks5://)")?;
    if !matches!(
        scheme.to_ascii_lowercase().as_str(),
        "http" | "https" | "socks" | "socks4" | "socks4a" | "socks5" | "socks5h"
    ) {
        return Err("its scheme is not http, https or socks");
    }
    let authority = rest.split('/').next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || host_port.starts_with('[') => (h, Some(p)),
        _ => (host_port, None),
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("it names no host");
    }
    if let Some(p) = port {
        if p.parse::<u16>().map_or(true, |p| p == 0) {
            return Err("its port is not a number from 1 to 65535");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn proxy_urls() {
        for ok in [
            "http://proxy:3128",
            "https://u:p@proxy.corp:8443/",
            "socks5h://10.0.0.1:1080",
            "http://[::1]:8080",
            "HTTP://proxy",
        ] {
            assert_eq!(super::proxy_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "proxy:3128",
            "ftp://x",
            "http://",
            "http://h:99999",
            "http://h:x",
        ] {
            assert!(super::proxy_url(bad).is_err(), "{bad}");
        }
    }
}
