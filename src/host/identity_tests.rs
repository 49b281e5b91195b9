//! Unit tests of `identity`.

use super::*;

#[test]
fn the_start_stamp_is_field_22_and_a_name_with_parentheses_does_not_shift_it() {
    let line = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
    assert_eq!(stat_start_ticks(line), Some(987_654));
    assert_eq!(stat_start_ticks("42 (x) S 1"), None);
    #[cfg(target_os = "linux")]
    {
        let me = std::process::id();
        let a = start_stamp(me).expect("this process has a start stamp");
        assert_eq!(start_stamp(me), Some(a), "stable across reads");
        assert_eq!(start_stamp(u32::MAX >> 1), None);
    }
}

#[test]
fn identity_files_are_removed_only_when_the_pid_they_name_is_gone() {
    let t = tempfile::tempdir().unwrap();
    let stack = crate::host::stack::Stack::new(
        "dead",
        &crate::host::stack::StackEnv {
            home: Some(t.path().to_path_buf()),
            ..Default::default()
        },
    )
    .unwrap();
    std::fs::create_dir_all(&stack.run_dir).unwrap();
    let write = |pid: u32| {
        for p in stack.identity_paths() {
            std::fs::write(&p, format!("{pid}\n")).unwrap();
        }
    };
    write(std::process::id());
    assert!(!remove_if_dead(&stack).unwrap(), "a live pid's files stay");
    assert!(stack.pid_path().exists());
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    write(dead_pid);
    assert!(remove_if_dead(&stack).unwrap());
    assert!(stack.identity_paths().iter().all(|p| !p.exists()));
}

#[test]
fn the_pid_file_reads_as_tr_d_space_reads_it() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("x.pid");
    assert_eq!(read_pid_file(&p).unwrap(), None);
    for (text, want) in [
        ("123\n", Ok(123)),
        (" 1 2 3 \n", Ok(123)),
        ("\n", Err(())),
        ("123\nstart_time=4\n", Err(())),
        ("0\n", Err(())),
    ] {
        std::fs::write(&p, text).unwrap();
        assert_eq!(
            read_pid_file(&p).unwrap().map(|r| r.map_err(drop)),
            Some(want),
            "{text:?}"
        );
    }
    assert_eq!(pid_file_text(42), "42\n");
}

#[test]
fn the_origin_file_has_oysteruns_rows_and_reads_back_as_awk_does() {
    let o = Origin {
        started_at_utc: "2025-01-02T03:04:05Z".into(),
        repo_root: "/opt/o".into(),
        host_dir: "/opt/o/host-service".into(),
        actual_cwd: "/opt/o/host-service".into(),
        config_dir: "/u/.oysterun".into(),
        host_port: "8802".into(),
        host_pid: 77,
        launch_label: "com.oysterun.host".into(),
    };
    let text = o.render();
    assert_eq!(
        text,
        "key\tvalue\nstarted_at_utc\t2025-01-02T03:04:05Z\nrepo_root\t/opt/o\n\
             host_dir\t/opt/o/host-service\nactual_cwd\t/opt/o/host-service\n\
             config_dir\t/u/.oysterun\nhost_port\t8802\nhost_pid\t77\n\
             launch_label\tcom.oysterun.host\n"
    );
    assert_eq!(origin_value(&text, "host_pid"), Some("77"));
    assert_eq!(origin_value(&text, "host_port"), Some("8802"));
    assert_eq!(origin_value(&text, "nope"), None);
}
