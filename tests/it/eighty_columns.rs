//! An 80-column terminal (issue 38, item 9): the Host's log lines are never re-flowed by
//! `logs` (the terminal wraps them; a copied line stays whole); a wrapped line keeps the columns
//! it is aligned to (`status`'s values, `doctor`'s text after its `[tag]`); `list` cuts the LOG
//! path to fit and says where it is whole (`--wide`, `status`); the `waiting for …` line fits
//! and the Host's `PATH=` breaks after a `:`. Piped, every line stays whole.

use crate::common::{args, free_port, shown_width, strip_ansi, TestContext};

/// A custom stack name near the longest: its paths and label run long in every output.
const LONG: &str = "a-rather-long-stack-name";

/// What an 80-column terminal showed for `args` (pty_drive), without colour, and its exit code.
fn shown(t: &TestContext, args: &[&str]) -> (String, i64) {
    let r = t.pty(b"", args);
    let text = r["output"].as_str().unwrap().replace("\r\n", "\n");
    let text: Vec<String> = text.lines().map(strip_ansi).collect();
    (text.join("\n"), r["code"].as_i64().unwrap())
}

/// A verified stack named [`LONG`] on a free port.
fn installed() -> TestContext {
    let t = TestContext::with_pinned_host();
    t.run(args(&["install", LONG]).port(free_port()).settle(200)).ok();
    t
}

fn done(t: &TestContext) {
    t.run(["uninstall", LONG]).ok();
    t.wait_no_processes();
}

#[test]
fn logs_never_reflows_the_hosts_lines_on_a_narrow_terminal() {
    let t = TestContext::with_stack_config("dev");
    let long = format!("host says {}end-of-line", "word    aligned  ".repeat(10));
    t.write_host_log("dev", &format!("{long}\n"));
    let shown = t.shown_on_pty(&["logs", "dev", "-n", "5"], 80);
    assert!(shown.lines().any(|l| strip_ansi(l) == long), "the line was re-flowed:\n{shown}");
}

/// `status` aligns its values at column 13 and `doctor` its text at column 7 (where each
/// `fix:` starts): a line too long for 80 columns goes on under that column, never back at the
/// left edge, and the runs of spaces that align the columns are kept.
#[test]
fn a_wrapped_status_or_doctor_line_goes_on_under_its_column() {
    let t = installed();
    let (status, code) = shown(&t, &["status", LONG]);
    assert_eq!(code, 0, "{status}");
    let mut wrapped = 0;
    for line in status.lines().skip(1) {
        let (lead, rest) = line.split_at(13.min(line.len()));
        // A path is never cut: alone on its line, it may be wider than the terminal.
        assert!(shown_width(line) <= 80 || !rest.contains(' '), "{line:?}\n{status}");
        if lead.trim().is_empty() {
            wrapped += 1;
            assert!(!rest.starts_with(' '), "{line:?}\n{status}");
        } else {
            // `  key:` then spaces up to the value's column.
            assert!(
                lead.starts_with("  ") && lead.trim_end().ends_with(':') && !rest.starts_with(' '),
                "{line:?}\n{status}"
            );
        }
    }
    assert!(wrapped > 0, "no line wrapped:\n{status}");
    assert!(status.contains("\n  status:    running, verified\n"), "{status}");

    let (doctor, _) = shown(&t, &["doctor", LONG]);
    let mut wrapped = 0;
    for line in doctor.lines().take_while(|l| !l.starts_with("authentication:")) {
        if !line.starts_with('[') {
            wrapped += usize::from(!line.trim_start().starts_with("fix:"));
            assert!(
                line.starts_with("       ")
                    && (shown_width(line) <= 80 || !line.trim().contains(' ')),
                "{line:?}\n{doctor}"
            );
        }
    }
    assert!(wrapped > 0, "no check wrapped:\n{doctor}");
    done(&t);
}

/// `list` on a terminal too narrow for the LOG path cuts it in its middle, so the columns stay
/// aligned, and says so, naming `--wide` (which keeps it whole, as piped output does) and
/// `status`.
#[test]
fn list_cuts_the_log_path_to_fit_says_so_and_wide_keeps_it_whole() {
    let t = installed();
    let whole = format!("~/.oysterun-stacks/{LONG}/logs/oysterun-host.log");
    let (list, code) = shown(&t, &["list"]);
    assert_eq!(code, 0, "{list}");
    let row = list.lines().find(|l| l.starts_with(LONG)).unwrap();
    assert!(shown_width(row) <= 80 && row.contains('…'), "{list}");
    assert!(!list.contains(&whole), "{list}");
    assert!(
        list.contains("LOG paths are cut to fit the terminal; `oyster list --wide` shows"),
        "{list}"
    );
    // --wide (and -w): the path whole, nothing to say.
    for wide in ["--wide", "-w"] {
        let (list, _) = shown(&t, &["list", wide]);
        let row = list.lines().find(|l| l.starts_with(LONG)).unwrap();
        assert!(row.ends_with(&whole), "{list}");
        assert!(!list.contains("--wide"), "{list}");
    }
    // Piped: never cut, nothing said.
    let r = t.run(["list"]).ok();
    r.stdout_has(&whole);
    assert!(!r.stderr().contains("--wide"), "{}", r.stderr());
    // status names it whole too.
    let (status, _) = shown(&t, &["status", LONG]);
    assert!(status.contains(&format!("  log:       {whole}")), "{status}");
    done(&t);
}

/// `restart -v` at 80 columns: the `waiting for …` line fits, and the Host's PATH, longer
/// than the terminal, breaks after a `:` under its first directory (the same directories, in
/// order, as the one `PATH=` line piped output prints).
#[test]
fn a_verbose_restart_fits_its_wait_line_and_breaks_the_path_after_a_colon() {
    let t = installed();
    // A provider deep in a folder: the Host's PATH runs past 80 columns.
    let deep = t.home.join("tools/provider-clis/claude-code/current/node_modules/.bin/claude");
    t.fake_exe(&deep);
    t.run(args(&["providers", "set", "claude", deep.to_str().unwrap()]).stack(LONG)).ok();
    let restart = ["restart", LONG, "-v", "--wait", "300", "--settle-ms", "200"];
    let (out, code) = shown(&t, &restart);
    assert_eq!(code, 0, "{out}");
    let waiting: Vec<&str> = out.lines().filter(|l| l.starts_with("waiting for")).collect();
    assert!(!waiting.is_empty(), "{out}");
    for l in waiting {
        assert!(shown_width(l) <= 80, "{l:?}\n{out}");
    }
    let at = out.lines().position(|l| l.starts_with("  PATH=")).unwrap_or_else(|| panic!("{out}"));
    let lines: Vec<&str> = out
        .lines()
        .skip(at)
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with("       /") || l.starts_with("       ~"))
        .map(|(_, l)| l)
        .collect();
    assert!(lines.len() > 1, "the PATH was not broken:\n{out}");
    for l in &lines {
        assert!(shown_width(l) <= 80, "{l:?}\n{out}");
        assert!(l.ends_with(':') || *l == lines[lines.len() - 1], "{out}");
    }
    let joined: String = lines.iter().map(|l| l.trim_start()).collect();
    // Piped: one line, the same PATH.
    let piped = t.run(restart).ok().stdout();
    let line =
        piped.lines().find(|l| l.starts_with("  PATH=")).unwrap_or_else(|| panic!("{piped}"));
    assert_eq!(joined, line.trim_start(), "{out}");
    assert!(line.contains("tools/provider-clis/claude-code/current/node_modules/.bin:"), "{line}");
    done(&t);
}

/// `config show` prints a document (a `#` comment and the config's JSON), not prose: on a
/// narrow terminal it is not re-flowed. Before, a string value with spaces was broken across
/// lines (the JSON no longer parsed when copied) and the comment went on without its `#`.
#[test]
fn config_show_is_not_reflowed_on_a_narrow_terminal() {
    let t = TestContext::with_stack_config("dev");
    let cfg = t.stack_dir("dev").join("host/config.json");
    let value = "a display name with spaces in it that runs well past forty columns";
    std::fs::write(&cfg, format!("{{\"port\": {}, \"display_name\": \"{value}\"}}\n", free_port()))
        .unwrap();
    let shown = strip_ansi(&t.shown_on_pty(&["config", "show", "dev"], 40));
    let mut lines = shown.lines();
    let comment = lines.next().unwrap();
    assert!(comment.starts_with("# ") && comment.ends_with("; secrets redacted"), "{shown}");
    let json: String = lines.collect::<Vec<_>>().join("\n");
    let doc: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}:\n{shown}"));
    assert_eq!(doc["display_name"], value);
}
