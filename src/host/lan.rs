//! Local Network privacy (macOS 15+, Apple TN3179): a program launchd starts that is not an
//! app (no bundle to ask for it) is subject to it, and until the user allows it, connections to
//! addresses on the local network fail with "No route to host" (EHOSTUNREACH), while the same
//! program run from Terminal reaches them (docs/launchd.md, "Local Network privacy"). oyster
//! cannot ask whether it is allowed, so `doctor` says it when the Host's config names an
//! address on the local network (issue 39 item 8): this module finds those.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde_json::{Map, Value};

/// One string of the config that names a local-network address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Where it is, as `key` or `key.sub[2]`.
    pub key: String,
    /// The host part it names.
    pub host: String,
}

/// Every string value of `config` that names a host on the local network: a private IPv4
/// (10/8, 172.16/12, 192.168/16), a link-local address (169.254/16, fe80::/10), a unique local
/// IPv6 (fc00::/7), or an mDNS name (`….local`); as a URL's host, `host:port`, or the whole
/// value. Loopback and public addresses are not.
pub fn lan_addresses(config: &Map<String, Value>) -> Vec<Found> {
    let mut out = vec![];
    for (k, v) in config {
        walk(k.clone(), v, &mut out);
    }
    out
}

fn walk(key: String, v: &Value, out: &mut Vec<Found>) {
    match v {
        Value::String(s) => {
            if let Some(host) = host_of(s).filter(|h| is_lan(h)) {
                out.push(Found { key, host });
            }
        }
        Value::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                walk(format!("{key}[{i}]"), item, out);
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                walk(format!("{key}.{k}"), item, out);
            }
        }
        _ => {}
    }
}

/// The host a string names: a URL's (`scheme://[user@]host[:port]/…`), or the string itself
/// as `host`, `host:port` or `[v6]:port` when it has no space and no slash.
fn host_of(s: &str) -> Option<String> {
    let s = s.trim();
    let authority = match s.split_once("://") {
        Some((_, rest)) => rest.split(['/', '?', '#']).next()?,
        None if !s.is_empty() && !s.contains([' ', '/']) => s,
        None => return None,
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split_once(']').map(|(h, _)| h.to_owned());
    }
    if authority.parse::<Ipv6Addr>().is_ok() {
        return Some(authority.to_owned());
    }
    Some(authority.split(':').next()?.to_owned())
}

/// Whether `host` is on the local network (see [`lan_addresses`]).
fn is_lan(host: &str) -> bool {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => a.is_private() || a.is_link_local(),
        Ok(IpAddr::V6(a)) => {
            let first = a.segments()[0];
            (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80 || v4_mapped_lan(a)
        }
        Err(_) => {
            let h = host.trim_end_matches('.').to_ascii_lowercase();
            h.ends_with(".local") && h.len() > ".local".len()
        }
    }
}

fn v4_mapped_lan(a: Ipv6Addr) -> bool {
    a.to_ipv4_mapped()
        .is_some_and(|v4: Ipv4Addr| v4.is_private() || v4.is_link_local())
}

/// The macOS version as (major, minor), from `SystemVersion.plist` (read through the bounded
/// reader); `None` off macOS or when it cannot be read.
pub fn macos_version() -> Option<(u32, u32)> {
    if !cfg!(target_os = "macos") {
        return None;
    }
    let path = std::path::Path::new("/System/Library/CoreServices/SystemVersion.plist");
    let bytes = crate::sys::fs::read_regular(path, 64 * 1024).ok()??;
    let v: plist::Value = plist::from_bytes(&bytes).ok()?;
    let text = v
        .as_dictionary()?
        .get("ProductVersion")?
        .as_string()?
        .to_owned();
    let mut parts = text.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_on_the_local_network_are_found_wherever_the_config_names_them() {
        let config: Map<String, Value> = serde_json::from_str(
            r#"{
                "ollama_base_url": "http://192.168.1.20:11434/v1",
                "proxy": "user:pw@10.0.0.5:3128",
                "nas": {"hosts": ["https://printer.local/", "example.com", "[fd12::1]:80"]},
                "camera": "169.254.10.1",
                "v6": "fe80::1",
                "public": "https://api.example.com",
                "loopback": "http://127.0.0.1:8802",
                "localhost": "http://localhost:8802",
                "text": "see 192.168.1.1 for details",
                "port": 8802,
                "not_private": "http://172.32.0.1"
            }"#,
        )
        .unwrap();
        let mut found: Vec<(String, String)> = lan_addresses(&config)
            .into_iter()
            .map(|f| (f.key, f.host))
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                ("camera".to_owned(), "169.254.10.1".to_owned()),
                ("nas.hosts[0]".to_owned(), "printer.local".to_owned()),
                ("nas.hosts[2]".to_owned(), "fd12::1".to_owned()),
                ("ollama_base_url".to_owned(), "192.168.1.20".to_owned()),
                ("proxy".to_owned(), "10.0.0.5".to_owned()),
                ("v6".to_owned(), "fe80::1".to_owned()),
            ]
        );
    }
}
