//! The unit file: a golden rendering, quoting read back by systemd's rules (a property test),
//! and what is refused.

use super::*;
use proptest::prelude::*;

fn args(stack: &str) -> Vec<String> {
    ["host", "exec", "--stack", stack]
        .map(str::to_owned)
        .to_vec()
}

fn env() -> Vec<(String, String)> {
    [
        ("HOME", "/home/ana"),
        ("OYSTERUN_NODE_BIN", "/opt/node 22/bin/node"),
        ("OYSTERUN_PORT", "8810"),
        ("PATH", "/opt/node 22/bin:/usr/local/bin:/usr/bin:/bin"),
        ("ODD", "50% \"of\" $HOME\\x"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec()
}

fn spec<'a>(args: &'a [String], env: &'a [(String, String)]) -> UnitSpec<'a> {
    UnitSpec {
        description: "Oysterun Host (stack dev)",
        program: Path::new("/home/ana/.local/bin/oyster"),
        args,
        working_directory: Path::new("/home/ana/Oysterun 100%/host-service"),
        env,
        log_path: Path::new("/home/ana/.oysterun-stacks/dev/logs/oysterun-host.log"),
        timing: Timing::HOST,
    }
}

#[test]
fn the_unit_renders_as_the_golden_file_and_the_same_spec_gives_the_same_bytes() {
    let (a, e) = (args("dev"), env());
    let bytes = render(&spec(&a, &e)).unwrap();
    let golden = include_str!("../../tests/fixtures/systemd/host.service.golden");
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        golden,
        "the rendering changed: compare with tests/fixtures/systemd/host.service.golden"
    );
    assert_eq!(render(&spec(&a, &e)).unwrap(), bytes);
}

#[test]
fn sub_second_spans_are_written_in_milliseconds() {
    let (a, e) = (args("dev"), env());
    let mut s = spec(&a, &e);
    s.timing.restart = Duration::from_millis(250);
    let text = String::from_utf8(render(&s).unwrap()).unwrap();
    assert!(text.contains("\nRestartSec=250ms\n"), "{text}");
}

#[test]
fn control_characters_anywhere_are_refused_naming_the_field() {
    let (a, e) = (args("dev"), env());
    let bad_arg = ["x".to_owned(), "a\nb".to_owned()];
    assert_eq!(
        render(&UnitSpec {
            args: &bad_arg,
            ..spec(&a, &e)
        }),
        Err(UnitError::Control(Field::Argument(1)))
    );
    let bad_env = [("K".to_owned(), "v\tw".to_owned())];
    assert_eq!(
        render(&UnitSpec {
            env: &bad_env,
            ..spec(&a, &e)
        }),
        Err(UnitError::Control(Field::Env("K".into())))
    );
    let desc = "Host\u{1b}[31m";
    assert_eq!(
        render(&UnitSpec {
            description: desc,
            ..spec(&a, &e)
        }),
        Err(UnitError::Control(Field::Description))
    );
    let log = Path::new("/tmp/a\u{7f}b.log");
    assert_eq!(
        render(&UnitSpec {
            log_path: log,
            ..spec(&a, &e)
        }),
        Err(UnitError::Control(Field::LogPath))
    );
}

#[test]
fn paths_systemd_would_change_or_refuse_are_refused() {
    let (a, e) = (args("dev"), env());
    let cases: [(&str, UnitError); 5] = [
        ("relative/log", UnitError::NotAbsolute(Field::LogPath)),
        (
            "/tmp/../etc/log",
            unexpressible(Field::LogPath, "not a normalized path"),
        ),
        (
            "/tmp//log",
            unexpressible(Field::LogPath, "not a normalized path"),
        ),
        (
            "/tmp/log ",
            unexpressible(Field::LogPath, "surrounding blanks"),
        ),
        (
            "/tmp/log\\",
            unexpressible(Field::LogPath, "a trailing backslash"),
        ),
    ];
    for (p, want) in cases {
        let got = render(&UnitSpec {
            log_path: Path::new(p),
            ..spec(&a, &e)
        });
        assert_eq!(got, Err(want), "{p}");
    }
    let long = format!("/{}", "x".repeat(256));
    assert!(matches!(
        render(&UnitSpec {
            working_directory: Path::new(&long),
            ..spec(&a, &e)
        }),
        Err(UnitError::Unexpressible { .. })
    ));
    for p in ["/opt/it's/oyster", "/opt/\"q\"/oyster", "/opt/a\\b/oyster"] {
        assert_eq!(
            render(&UnitSpec {
                program: Path::new(p),
                ..spec(&a, &e)
            }),
            Err(unexpressible(Field::Program, "quotes or a backslash")),
            "{p}"
        );
    }
    use std::os::unix::ffi::OsStrExt;
    let latin1 = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9"));
    assert_eq!(
        render(&UnitSpec {
            program: latin1,
            ..spec(&a, &e)
        }),
        Err(UnitError::NotUtf8(Field::Program))
    );
}

#[test]
fn environment_names_are_checked_and_given_once() {
    let a = args("dev");
    for bad in ["", "1A", "A-B", "A=B", "É"] {
        let e = [(bad.to_owned(), "v".to_owned())];
        assert_eq!(
            render(&spec(&a, &e)),
            Err(UnitError::BadEnvName(bad.to_owned())),
            "{bad:?}"
        );
    }
    let twice = [
        ("A".to_owned(), "1".to_owned()),
        ("A".to_owned(), "2".to_owned()),
    ];
    assert_eq!(
        render(&spec(&a, &twice)),
        Err(UnitError::DuplicateEnv("A".into()))
    );
}

#[test]
fn unit_names_and_the_unit_path() {
    assert_eq!(
        unit_name("com.oysterun.host.dev").unwrap(),
        "com.oysterun.host.dev.service"
    );
    for bad in ["", "-x", ".x", "a b", "a/b", "a*"] {
        assert!(unit_name(bad).is_err(), "{bad:?}");
    }
    assert!(unit_name(&"a".repeat(250)).is_err());
    let home = Path::new("/home/ana");
    assert_eq!(
        unit_path(home, None, "com.oysterun.host").unwrap(),
        Path::new("/home/ana/.config/systemd/user/com.oysterun.host.service")
    );
    assert_eq!(
        unit_dir(home, Some(Path::new("/xdg"))),
        Path::new("/xdg/systemd/user")
    );
    assert_eq!(
        unit_dir(home, Some(Path::new("rel"))),
        Path::new("/home/ana/.config/systemd/user"),
        "a relative XDG_CONFIG_HOME is ignored"
    );
}

/// systemd's reading of one line's words, for the subset [`render`] writes: double-quoted
/// words with C escapes (systemd.syntax(7)), then specifiers (`%%` → `%`) and, in arguments
/// after the program, `$$` → `$` (systemd.service(5)). `None` for anything else.
fn systemd_words(line: &str, dollars_from: usize) -> Option<Vec<String>> {
    let mut words = vec![];
    let mut chars = line.chars().peekable();
    loop {
        match chars.next() {
            None => break,
            Some(' ') => continue,
            Some('"') => {}
            Some(_) => return None,
        }
        let mut w = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => match chars.next()? {
                    '\\' => w.push('\\'),
                    '"' => w.push('"'),
                    _ => return None,
                },
                c => w.push(c),
            }
        }
        if !matches!(chars.peek(), None | Some(' ')) {
            return None;
        }
        let mut w = unescape_pair(&w, '%')?;
        if words.len() >= dollars_from {
            w = unescape_pair(&w, '$')?;
        }
        words.push(w);
    }
    Some(words)
}

/// `cc` → `c`; a lone `c` is not what the renderer writes.
fn unescape_pair(s: &str, c: char) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(x) = chars.next() {
        if x == c && chars.next()? != c {
            return None;
        }
        out.push(x);
    }
    Some(out)
}

fn field_of(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_owned)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(256)))]

    #[test]
    fn every_argument_and_value_reads_back_as_given(
        program in "/[a-zA-Z0-9 $%é;]{1,20}",
        argv in proptest::collection::vec("[^\\p{Cc}]{0,24}", 0..6),
        values in proptest::collection::vec("[^\\p{Cc}]{0,24}", 0..4),
    ) {
        prop_assume!(program != "/." && program != "/..");
        let env: Vec<(String, String)> =
            values.iter().enumerate().map(|(i, v)| (format!("V{i}"), v.clone())).collect();
        let s = UnitSpec {
            program: Path::new(&program),
            args: &argv,
            env: &env,
            ..spec(&[], &[])
        };
        let text = String::from_utf8(render(&s).unwrap()).unwrap();
        prop_assert!(!text.lines().any(|l| l.ends_with('\\')));
        let exec = field_of(&text, "ExecStart");
        prop_assert_eq!(exec.len(), 1);
        let words = systemd_words(&exec[0], 1).unwrap();
        let mut want = vec![program.clone()];
        want.extend(argv.iter().cloned());
        prop_assert_eq!(words, want);
        let assigned: Vec<String> = field_of(&text, "Environment")
            .iter()
            .map(|l| {
                let w = systemd_words(l, usize::MAX).unwrap();
                assert_eq!(w.len(), 1, "{l}");
                w[0].clone()
            })
            .collect();
        let want: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        prop_assert_eq!(assigned, want);
        let read: Vec<(String, String)> = crate::systemd::environment_of(&[&text], Path::new("/h"))
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_else(|| "<unknown>".into())))
            .collect();
        prop_assert_eq!(read, env);
    }
}
