//! The simulator's per-user state on disk: disabled labels (which, as in launchd, persist across
//! reboots and plist deletion) and the fault-injection counter.

use std::collections::BTreeMap;
use std::collections::BTreeMap as Map;
use std::path::{Path, PathBuf};

fn disabled_path(state: &Path) -> PathBuf {
    state.join("disabled.json")
}

/// `{"501": {"label": true}}`: one store of overrides **per user** (true = disabled, false =
/// explicitly enabled), read and written through `gui/<uid>` and `user/<uid>` alike, as
/// launchd keeps one `/private/var/db/com.apple.xpc.launchd/disabled.<uid>.plist` per user
/// (docs/launchd.md, "Domains").
fn read_all(state: &Path) -> Map<String, Map<String, bool>> {
    std::fs::read(disabled_path(state))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The overrides of user `uid`, whichever of their domains asks.
pub fn overrides(state: &Path, uid: u32) -> Option<Map<String, bool>> {
    read_all(state).remove(&uid.to_string())
}

pub fn set_disabled(state: &Path, uid: u32, label: &str, disabled: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(state)?;
    let mut all = read_all(state);
    all.entry(uid.to_string())
        .or_default()
        .insert(label.to_owned(), disabled);
    let tmp = state.join(format!(".disabled.json.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&all)?)?;
    std::fs::rename(tmp, disabled_path(state))
}

pub fn is_disabled(state: &Path, uid: u32, label: &str) -> bool {
    overrides(state, uid)
        .and_then(|m| m.get(label).copied())
        .unwrap_or(false)
}

fn login_items_path(state: &Path) -> PathBuf {
    state.join("login-items.json")
}

/// The Login Items switch of macOS 13+ (System Settings → General → Login Items, "Allow in
/// the Background"), per user and label: `{"501": {"label": "off"}}`: `on`, `off` (switched
/// off), or `hang` (on, but ServiceManagement's status query for it never answers: the
/// Background Task Management daemon wedged). Only the simulator's own `login-item` verb sets
/// it (the user's click in System Settings).
fn login_items(state: &Path) -> Map<String, Map<String, String>> {
    std::fs::read(login_items_path(state))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The switch of `label` for `uid`: `on` unless set.
pub fn login_item(state: &Path, uid: u32, label: &str) -> String {
    login_items(state)
        .remove(&uid.to_string())
        .and_then(|mut m| m.remove(label))
        .unwrap_or_else(|| "on".to_owned())
}

pub fn login_item_off(state: &Path, uid: u32, label: &str) -> bool {
    login_item(state, uid, label) == "off"
}

pub fn set_login_item(state: &Path, uid: u32, label: &str, word: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(state)?;
    let mut all = login_items(state);
    all.entry(uid.to_string())
        .or_default()
        .insert(label.to_owned(), word.to_owned());
    let tmp = state.join(format!(".login-items.json.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&all)?)?;
    std::fs::rename(tmp, login_items_path(state))
}

/// `LAUNCHD_SIM_FAIL_BOOTSTRAP=CODE[:COUNT]`: fail the next COUNT bootstraps (all, without a
/// count) with CODE. The count is kept in the state directory so it spans calls.
pub fn take_injected_failure(state: &Path, knobs: &BTreeMap<String, String>) -> Option<i32> {
    let spec = knobs.get("LAUNCHD_SIM_FAIL_BOOTSTRAP")?;
    let (code, count) = match spec.split_once(':') {
        Some((c, n)) => (c.parse().ok()?, Some(n.parse::<u32>().ok()?)),
        None => (spec.parse().ok()?, None),
    };
    let Some(limit) = count else {
        return Some(code);
    };
    take_counted(state, "fail-bootstrap.count", limit).then_some(code)
}

/// True for the first `limit` calls that ask, false after: the count is kept in `file` in the
/// state directory, so it spans calls (and daemon restarts).
pub fn take_counted(state: &Path, file: &str, limit: u32) -> bool {
    let counter = state.join(file);
    let used: u32 = std::fs::read_to_string(&counter)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    if used >= limit {
        return false;
    }
    let _ = std::fs::write(&counter, format!("{}\n", used + 1));
    true
}

/// The user's name and shell from the user database (what launchd gives jobs).
pub fn passwd() -> (String, String) {
    // nix retries getpwuid_r with a larger buffer on ERANGE, so a long entry is not lost.
    match nix::unistd::User::from_uid(nix::unistd::getuid()) {
        Ok(Some(u)) => (u.name, u.shell.to_string_lossy().into_owned()),
        _ => ("unknown".into(), "/bin/sh".into()),
    }
}
