use std::os::unix::fs::PermissionsExt;

use super::*;

#[test]
fn lines_are_read_literally_and_bad_ones_are_left_out_by_number_never_by_value() {
    let f = parse(
        "# a comment\n\n  HTTPS_PROXY=http://u:p@proxy:8080\r\nexport NO_PROXY=127.0.0.1,localhost\n\
         Q=\"quoted value\"\nS='x'\nRAW=$HOME/a b\nPATH=/evil\nsecret-on-its-own-line\n\
         1BAD=hunter2\nHTTPS_PROXY=http://later\nEMPTY=\n",
    );
    assert_eq!(
        f.vars,
        vec![
            ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
            ("Q".into(), "quoted value".into()),
            ("S".into(), "x".into()),
            ("RAW".into(), "$HOME/a b".into()),
            ("HTTPS_PROXY".into(), "http://later".into()),
            ("EMPTY".into(), String::new()),
        ]
    );
    let said = f.problems.join("\n");
    assert!(said.contains("line 8: PATH is oyster's to set"), "{said}");
    assert!(said.contains("line 9: no `=`"), "{said}");
    assert!(said.contains("line 10: not a variable name"), "{said}");
    assert!(
        said.contains("line 11: HTTPS_PROXY is declared again"),
        "{said}"
    );
    for secret in ["hunter2", "secret-on-its-own-line", "u:p@", "/evil"] {
        assert!(!said.contains(secret), "{secret} shown in {said}");
    }
}

#[test]
fn names_oyster_owns_and_unusable_values_are_refused() {
    for bad in [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
        "OYSTERUN_PORT",
        "OYSTER_LAUNCHCTL",
        "",
        "A-B",
        "9X",
        "A B",
    ] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    for good in ["HTTPS_PROXY", "https_proxy", "_X", "NODE_EXTRA_CA_CERTS"] {
        assert!(check_name(good).is_ok(), "{good:?}");
    }
    let why = check_value("K", "a\nb").unwrap_err().to_string();
    assert!(why.contains("line break") && !why.contains("a\nb"));
    assert!(check_value("K", "a\0b").is_err());
    assert!(check_value("K", "a\rb").is_err());
}

#[test]
fn an_edit_keeps_every_other_line_and_reads_back_what_was_set() {
    let text = "# mine\nA=1\nB=2\nA=3\n";
    assert_eq!(edit(text, "A", Some("9")), "# mine\nB=2\nA=9\n");
    assert_eq!(edit(text, "A", None), "# mine\nB=2\n");
    assert_eq!(edit(text, "C", Some("x")), "# mine\nA=1\nB=2\nA=3\nC=x\n");
    let fresh = edit("", "C", Some("\"both\""));
    assert!(fresh.starts_with("# The Oysterun Host's declared environment"));
    assert_eq!(parse(&fresh).get("C"), Some("\"both\""));
    for v in ["'", "\"", "''", "'a'", "a'", " spaced ", "=x=", ""] {
        assert_eq!(parse(&edit("", "V", Some(v))).get("V"), Some(v), "{v:?}");
    }
}

#[test]
fn a_file_others_can_write_or_another_user_owns_is_not_used() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(FILE_NAME);
    assert_eq!(read(&p), Ok(None));
    std::fs::write(&p, "HTTPS_PROXY=http://proxy:3128\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        read(&p).unwrap().unwrap().get("HTTPS_PROXY"),
        Some("http://proxy:3128")
    );
    for (mode, who) in [(0o620, "its group"), (0o602, "others"), (0o666, "others")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        let r = read(&p).unwrap_err();
        assert!(
            r.why.to_string().contains(&format!("writable by {who}")),
            "{r}"
        );
        assert_eq!(r.fix(), format!("chmod 600 {}", p.display()));
        assert!(!r.to_string().contains("proxy:3128"));
    }
    // A link is never followed, a directory never read.
    let link = d.path().join("link.env");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    assert!(read(&link).unwrap_err().why.to_string().contains("symlink"));
    assert!(read(d.path())
        .unwrap_err()
        .why
        .to_string()
        .contains("directory"));
}

#[test]
fn a_change_is_refused_before_writing_and_written_0600_otherwise() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("host").join(FILE_NAME);
    assert_eq!(change(&p, "A", Some("1")).unwrap(), Changed::Written);
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(change(&p, "A", Some("1")).unwrap(), Changed::Unchanged);
    assert_eq!(change(&p, "B", None).unwrap(), Changed::Unchanged);
    assert!(change(&p, "PATH", Some("/x")).is_err());
    assert!(change(&p, "A", Some("x\ny")).is_err());
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    let before = std::fs::read(&p).unwrap();
    let e = change(&p, "A", Some("2")).unwrap_err();
    assert!(format!("{e:#}").contains("nothing was changed"), "{e:#}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(secret_values_on_disk(&p), vec!["1".to_owned()]);
}

#[test]
fn a_name_and_value_in_one_word_never_shows_the_value() {
    for (word, name) in [
        ("MY_PW=hunter22", "MY_PW"),
        ("NO_PROXY=corp.internal", "NO_PROXY"),
        ("9X=hunter22", "NAME"),
    ] {
        let why = check_name(word).unwrap_err().to_string();
        assert!(
            !why.contains("hunter22") && !why.contains("corp.internal"),
            "{why}"
        );
        assert!(why.contains(&format!("`{name}=…`")), "{why}");
    }
}

#[test]
fn names_oyster_owns_are_refused_in_any_case() {
    for bad in [
        "oysterun_port",
        "Oyster_Launchctl",
        "path",
        "Home",
        "tmpdir",
    ] {
        let why = check_name(bad).unwrap_err().to_string();
        assert!(why.contains("oyster's to set"), "{bad}: {why}");
    }
    let f = parse("oysterun_port=1\nhttps_proxy=http://p:1\n");
    assert_eq!(f.vars, vec![("https_proxy".into(), "http://p:1".into())]);
}

#[test]
fn a_file_in_a_directory_others_can_write_is_not_used_nor_changed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("host");
    std::fs::create_dir(&dir).unwrap();
    let p = dir.join(FILE_NAME);
    assert_eq!(change(&p, "A", Some("1")).unwrap(), Changed::Written);
    for mode in [0o777, 0o770, 0o1777] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let r = read(&p).unwrap_err();
        assert!(
            r.why.to_string().contains(&dir.display().to_string()),
            "{r}"
        );
        assert_eq!(r.fix(), format!("chmod go-w {}", dir.display()));
        let before = std::fs::read(&p).unwrap();
        let e = change(&p, "A", Some("2")).unwrap_err();
        assert!(format!("{e:#}").contains("nothing was changed"), "{e:#}");
        assert_eq!(std::fs::read(&p).unwrap(), before);
    }
    // No file yet: the directory is what is refused, so `env set` writes nothing into it.
    std::fs::remove_file(&p).unwrap();
    assert!(read(&p).is_err());
    assert!(change(&p, "A", Some("1")).is_err());
    assert!(!p.exists());
}

#[test]
fn a_settings_value_is_no_secret_and_every_other_value_is() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(FILE_NAME);
    std::fs::write(
        &p,
        "NODE_ENV=production\nNO_PROXY=127.0.0.1\nAPP_MODE=production\nTOKEN=abcd1234\n",
    )
    .unwrap();
    assert_eq!(
        secret_values_on_disk(&p),
        vec!["production".to_owned(), "abcd1234".to_owned()]
    );
}
