//! `environment_of` against what a real `systemd --user` (252) set for the same lines
//! (`systemctl --user show -p Environment`, measured in hostile pass 8 for every form of
//! `Environment=` here); `UnsetEnvironment=` and `EnvironmentFile=` as systemd.exec(5) says.

use super::*;

fn env(files: &[&str]) -> Vec<(String, Option<String>)> {
    environment_of(files, Path::new("/home/u"))
}

fn get(files: &[&str], key: &str) -> Option<Option<String>> {
    env(files)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

const UNIT: &str = "[Unit]\nDescription=x\n\n[Service]\nEnvironment=\"N=/usr/bin/node\"\nEnvironment=\"R=/opt/root\"\n";

fn edited(extra: &str) -> String {
    format!("{UNIT}{extra}\n[Install]\nWantedBy=default.target\n")
}

#[test]
fn a_later_assignment_wins_in_any_form_systemd_takes() {
    for extra in [
        "Environment=\"N=/opt/other\"",
        "Environment=N=/opt/other",
        "Environment = \"N=/opt/other\"  ",
        "Environment=\"X=1\" \"N=/opt/other\"",
        "Environment=X=1 N=/opt/other",
        "Environment=N=\"/opt/other\"",
        "Environment='N=/opt/other'",
        "Environment=\"X=1\" \\\n  \"N=/opt/other\"",
        "Environment=\"N=/opt/oth\\x65r\"",
        "Environment=\"N=/opt/\\157ther\"",
    ] {
        assert_eq!(
            get(&[&edited(extra)], "N"),
            Some(Some("/opt/other".into())),
            "{extra}"
        );
        // The other assignment keeps its place and value.
        assert_eq!(
            env(&[&edited(extra)])[1],
            ("R".into(), Some("/opt/root".into()))
        );
    }
}

#[test]
fn what_systemd_does_not_assign_changes_nothing() {
    for extra in [
        "#Environment=\"N=/opt/other\"",
        ";Environment=\"N=/opt/other\"",
        "Environment=\"N=/opt/other",
        "Environment=\"1N=/opt/other\"",
        "Environment=\"N/opt/other\"",
        "Environment=\"N=/opt/\\qother\"",
        "EnvironmentX=\"N=/opt/other\"",
    ] {
        assert_eq!(
            get(&[&edited(extra)], "N"),
            Some(Some("/usr/bin/node".into())),
            "{extra}"
        );
    }
    // In another section.
    let text = format!("{UNIT}\n[Install]\nEnvironment=\"N=/opt/other\"\n");
    assert_eq!(get(&[&text], "N"), Some(Some("/usr/bin/node".into())));
    // Before an invalid escape, a word is assigned; after it, none.
    let line = edited("Environment=\"N=/opt/a\" \"X=\\q\" \"R=/opt/b\"");
    assert_eq!(get(&[&line], "N"), Some(Some("/opt/a".into())));
    assert_eq!(get(&[&line], "R"), Some(Some("/opt/root".into())));
}

#[test]
fn an_empty_assignment_clears_and_a_drop_in_overrides() {
    assert_eq!(env(&[&edited("Environment=")]), vec![]);
    let drop_in = "[Service]\nEnvironment=\"N=/opt/drop-in\"\n";
    assert_eq!(
        get(&[UNIT, drop_in], "N"),
        Some(Some("/opt/drop-in".into()))
    );
    let cleared = "[Service]\nEnvironment=\nEnvironment=\"R=/r\"\n";
    assert_eq!(env(&[UNIT, cleared]), vec![("R".into(), Some("/r".into()))]);
}

#[test]
fn specifiers_other_than_percent_and_home_are_not_guessed() {
    let home = edited("Environment=\"R=%h/root\" \"P=100%%\"");
    assert_eq!(get(&[&home], "R"), Some(Some("/home/u/root".into())));
    assert_eq!(get(&[&home], "P"), Some(Some("100%".into())));
    let other = edited("Environment=\"R=%t/root\"");
    assert_eq!(get(&[&other], "R"), Some(None));
}

#[test]
fn an_environment_file_makes_every_value_unknown() {
    let text = edited("EnvironmentFile=-/etc/oyster.env");
    assert!(env(&[&text]).iter().all(|(_, v)| v.is_none()));
    let reset = edited("EnvironmentFile=/etc/oyster.env\nEnvironmentFile=");
    assert_eq!(get(&[&reset], "N"), Some(Some("/usr/bin/node".into())));
}

#[test]
fn unset_environment_removes_a_name_or_a_name_with_its_value() {
    let text = edited("UnsetEnvironment=N");
    assert_eq!(get(&[&text], "N"), None);
    let text = edited("UnsetEnvironment=R=/opt/root N=/other");
    assert_eq!(get(&[&text], "R"), None);
    assert_eq!(get(&[&text], "N"), Some(Some("/usr/bin/node".into())));
    let text = edited("UnsetEnvironment=N\nUnsetEnvironment=");
    assert_eq!(get(&[&text], "N"), Some(Some("/usr/bin/node".into())));
}
