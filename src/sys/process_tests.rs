//! Unit tests of the subprocess door: deadlines, process groups, capped capture, no shell.

use super::*;

#[test]
fn a_program_gets_its_arguments_byte_for_byte_its_directory_and_only_its_environment() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = OsStr::from_bytes(b"caf\xe9");
    std::fs::write(dir.path().join(name), "").unwrap();
    let vars = [("ONLY".to_owned(), "this".to_owned())];
    let f = Program::new(Path::new("/bin/sh"))
        .args([
            "-c",
            "[ -f \"$1\" ] && pwd && echo \"$ONLY ${HOME:-none}\"",
            "sh",
        ])
        .arg(name)
        .env(ChildEnv::Exactly(&vars))
        .cwd(dir.path())
        .timeout(Duration::from_secs(5))
        .run()
        .unwrap();
    assert_eq!(f.code, 0, "{f:?}");
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(f.stdout, format!("{}\nthis none\n", cwd.display()));
    assert_eq!(
        f.argv.last().map(String::as_str),
        Some("caf\u{fffd}"),
        "shown lossily, handed on exactly"
    );
}

#[test]
fn a_built_program_keeps_the_deadline_for_its_whole_group() {
    let t0 = Instant::now();
    let e = Program::new(Path::new("/bin/sh"))
        .args(["-c", "sleep 30 & sleep 30"])
        .timeout(Duration::from_millis(200))
        .stream(&mut |_, _| {})
        .unwrap_err();
    assert!(matches!(e, ProcessError::Timeout { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn captures_both_streams_and_the_code() {
    let f = run(
        Path::new("/bin/sh"),
        &["-c", "echo out; echo err >&2; exit 3"],
        ChildEnv::Exactly(&[]),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(
        (f.code, f.stdout.as_str(), f.stderr.as_str()),
        (3, "out\n", "err\n")
    );
}

#[test]
fn a_hung_program_is_killed_with_its_group() {
    let t0 = Instant::now();
    let e = run(
        Path::new("/bin/sh"),
        &["-c", "sleep 30 & sleep 30"],
        ChildEnv::Inherit,
        Duration::from_millis(200),
    )
    .unwrap_err();
    assert!(matches!(e, ProcessError::Timeout { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn streaming_hands_over_each_line_as_it_comes_and_keeps_the_guarantees() {
    let mut seen = vec![];
    let f = run_streaming(
        Path::new("/bin/sh"),
        &["-c", "echo one; echo two >&2; printf three; exit 4"],
        ChildEnv::Exactly(&[]),
        None,
        Duration::from_secs(5),
        &mut |s, l| seen.push((s, l.to_owned())),
    )
    .unwrap();
    assert_eq!(f.code, 4);
    assert_eq!(f.stdout, "one\nthree");
    assert!(seen.contains(&(Stream::Stdout, "one".into())));
    assert!(seen.contains(&(Stream::Stderr, "two".into())));
    assert!(seen.contains(&(Stream::Stdout, "three".into())));
    let t0 = Instant::now();
    let mut lines = 0;
    let e = run_streaming(
        Path::new("/bin/sh"),
        &["-c", "echo started; sleep 30 & sleep 30"],
        ChildEnv::Inherit,
        None,
        Duration::from_millis(300),
        &mut |_, _| lines += 1,
    )
    .unwrap_err();
    assert!(matches!(e, ProcessError::Timeout { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(lines, 1, "the line came before the deadline");
}

#[test]
fn a_flood_of_output_never_starves_the_deadline_nor_the_end() {
    // Printing each line is slower than `yes` writes them: the deadline still holds.
    let slow = &mut |_: Stream, _: &str| std::thread::sleep(Duration::from_micros(20));
    let t0 = Instant::now();
    let e = run_streaming(
        Path::new("/bin/sh"),
        &["-c", "exec yes flood"],
        ChildEnv::Inherit,
        None,
        Duration::from_millis(300),
        slow,
    )
    .unwrap_err();
    assert!(matches!(e, ProcessError::Timeout { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // A grandchild that keeps the pipe and keeps writing after the program exited: the
    // last drain is bounded too.
    let t0 = Instant::now();
    let f = run_streaming(
        Path::new("/bin/sh"),
        &["-c", "yes flood & echo $! > /dev/null; exit 0"],
        ChildEnv::Inherit,
        None,
        Duration::from_secs(5),
        slow,
    );
    let took = t0.elapsed();
    assert!(f.is_ok_and(|f| f.code == 0));
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_line_without_end_is_handed_on_in_capped_pieces() {
    let mut pieces = vec![];
    let text = [vec![b'x'; LINE_CAP * 2 + 10], b"\nend".to_vec()].concat();
    read_lines(Box::new(std::io::Cursor::new(text)), &mut |l| {
        pieces.push(l.len());
        true
    });
    assert_eq!(pieces, [LINE_CAP, LINE_CAP, 11, 3]);
}

#[test]
fn output_is_capped() {
    let f = run(
        Path::new("/bin/sh"),
        &["-c", "head -c 3000000 /dev/zero"],
        ChildEnv::Inherit,
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(f.stdout.len(), OUTPUT_CAP);
}

#[test]
fn inherit_with_keeps_this_process_environment_and_sets_the_given_variables_over_it() {
    // PATH is inherited (the child finds nothing without it only when it was cleared), and
    // the given variable is set, byte for byte.
    use std::os::unix::ffi::OsStrExt;
    let value = OsStr::from_bytes(b"/run/user/x\xe9");
    let f = Program::new(Path::new("/bin/sh"))
        .args([
            "-c",
            "printf '%s|' \"${PATH:+has-path}\"; printf '%s' \"$XDG_RUNTIME_DIR\" | od -An -c",
        ])
        .env(ChildEnv::InheritWith(&[("XDG_RUNTIME_DIR", value)]))
        .timeout(Duration::from_secs(5))
        .run()
        .unwrap();
    assert_eq!(f.code, 0, "{f:?}");
    assert!(f.stdout.starts_with("has-path|"), "{f:?}");
    assert!(
        f.stdout.contains("351"),
        "the byte 0xe9 arrives as is: {f:?}"
    );
}
