//! What refuses a run that would load the unit, decided before anything is written or asked
//! of the manager: a unit path that is not a regular file (a FIFO `systemctl enable` would
//! block on; a symlink `systemctl disable` removes), root's own unit, and a drop-in that
//! overrides what oyster's unit says the Host runs with (its environment, its program): a
//! reload would start the Host on the drop-in's values, no verification could pass, and the
//! rollback could only stop it.

use crate::service::said::Declined;
use std::path::{Path, PathBuf};

use crate::error::Invalid;
use crate::sys::fs::{self as fsutil, FsError};

/// The `[Service]` settings a drop-in may not set beside oyster's unit: they change what the
/// Host runs or the environment it gets.
pub const OVERRIDING_KEYS: [&str; 5] = [
    "Environment",
    "EnvironmentFile",
    "UnsetEnvironment",
    "PassEnvironment",
    "ExecStart",
];

/// The most of a drop-in that is read.
const MAX_DROP_IN_BYTES: u64 = 256 * 1024;

/// A unit path that is a symlink, a FIFO, a directory or another special file is refused
/// (exit 2), never opened and never handed to systemctl.
pub fn refuse_special(path: &Path) -> Result<(), FsError> {
    fsutil::refuse_symlink(path)?;
    match fsutil::not_regular(path) {
        Some(kind) => Err(FsError::NotRegular {
            path: path.to_owned(),
            kind,
        }),
        None => Ok(()),
    }
}

/// `stop` without `--keep` disables the unit, and `systemctl disable` removes a unit file that
/// is a symlink (a "linked" unit): refused before anything is stopped, with `--keep` (which
/// does not disable) as the way to stop it.
pub fn refuse_disabling_a_link(path: &Path, keep_hint: &str) -> Result<(), Invalid> {
    let linked = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !linked {
        return Ok(());
    }
    Err(Declined::LinkedUnit {
        path: path.to_owned(),
        keep: keep_hint.to_owned(),
    }
    .into())
}

/// Root's own user manager never gets a unit: it would run the Host as root. Refused unless
/// `OYSTER_SYSTEMCTL` names the manager (a test's, or an administrator's deliberate choice).
pub fn refuse_root(sc: &crate::systemd::Systemctl) -> Result<(), Invalid> {
    if crate::sys::user::euid() == 0 && !sc.overridden {
        return Err(Declined::Root {
            manager: crate::service::ManagerKind::Systemd,
        }
        .into());
    }
    Ok(())
}

/// The drop-ins of `unit` (`name`) that set one of [`OVERRIDING_KEYS`]: the ones the manager
/// loaded (`loaded`), and those on disk in `<unit>.d/` that the next `daemon-reload` reads.
pub fn overriding_drop_ins(unit: &Path, loaded: &[PathBuf]) -> Vec<(PathBuf, Vec<String>)> {
    let mut paths: Vec<PathBuf> = loaded.to_vec();
    let dir = PathBuf::from(format!("{}.d", unit.display()));
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut on_disk: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        on_disk.sort();
        paths.extend(on_disk);
    }
    let mut seen = std::collections::BTreeSet::new();
    paths
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .filter_map(|p| {
            let bytes = fsutil::read_regular(&p, MAX_DROP_IN_BYTES).ok().flatten()?;
            let keys = overriding_keys(&String::from_utf8_lossy(&bytes));
            (!keys.is_empty()).then_some((p, keys))
        })
        .collect()
}

/// The [`OVERRIDING_KEYS`] a drop-in's text sets in its `[Service]` section, each once, in
/// the order met.
pub fn overriding_keys(text: &str) -> Vec<String> {
    let mut section = String::new();
    let mut keys: Vec<String> = vec![];
    for line in text.lines().map(str::trim) {
        if line.starts_with(['#', ';']) || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_owned();
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "Service" && OVERRIDING_KEYS.contains(&key) && !keys.iter().any(|k| k == key)
        {
            keys.push(key.to_owned());
        }
    }
    keys
}

/// The refusal for drop-ins that override oyster's unit (exit 2), naming each and what it sets.
pub fn drop_in_refusal(name: &str, found: &[(PathBuf, Vec<String>)]) -> Invalid {
    Declined::DropIns {
        unit: name.to_owned(),
        found: found.to_vec(),
        keys: OVERRIDING_KEYS.map(str::to_owned).to_vec(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_service_sections_environment_and_program_count() {
        let text = "# a comment\n[Unit]\nEnvironment=NOT_HERE=1\n[Service]\nMemoryMax=1G\n Environment = \"OYSTERUN_PORT=1\"\nEnvironment=B=2\nExecStart=\n;ExecStart=/x\n[Install]\nEnvironmentFile=/x\n";
        assert_eq!(overriding_keys(text), ["Environment", "ExecStart"]);
        assert!(overriding_keys("[Service]\nNice=5\nRestartSec=1\n").is_empty());
    }

    #[test]
    fn a_drop_in_on_disk_counts_before_the_manager_loaded_it_and_each_is_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let unit = dir.path().join("com.oysterun.host.a.service");
        let d = dir.path().join("com.oysterun.host.a.service.d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("a.conf"), "[Service]\nEnvironment=X=1\n").unwrap();
        std::fs::write(d.join("b.conf"), "[Service]\nNice=3\n").unwrap();
        std::fs::write(d.join("c.txt"), "[Service]\nEnvironment=X=1\n").unwrap();
        let found = overriding_drop_ins(&unit, &[d.join("a.conf")]);
        assert_eq!(
            found,
            vec![(d.join("a.conf"), vec!["Environment".to_owned()])]
        );
        assert!(
            refuse_special(&unit).is_ok(),
            "a missing unit is not special"
        );
        std::os::unix::fs::symlink("/dev/null", &unit).unwrap();
        assert!(matches!(
            refuse_special(&unit),
            Err(FsError::Symlink { .. })
        ));
    }
}
