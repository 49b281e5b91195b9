//! Whole outputs of what a newcomer meets as snapshots (issue 28): `setup` answered with a
//! cancel on a terminal, `open` and `qr`, `completions bash` and the `man` page. Filtered as
//! `snapshots.rs` filters them.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::common::{free_port, recorder, TestContext};
use crate::snapshots::{installed, settings, snap};

/// Runs oyster on a pseudo-terminal `cols` wide, types `answer` once it shows `prompt`, and
/// returns the exit code and everything the terminal showed, its line ends as `\n` and the
/// escape character as `␛` (the styling is part of what a person sees, so it is kept, visibly).
fn on_terminal(
    t: &TestContext,
    args: &[&str],
    cols: u16,
    prompt: &str,
    answer: &str,
) -> (i32, String) {
    let (mut child, mut master) = t.spawn_on_pty(args, Some(cols));
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn({
        let mut reader = master.try_clone().unwrap();
        move || {
            let mut buf = [0u8; 4096];
            // EIO once the child closed its side.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        }
    });
    let mut shown = vec![];
    let mut answered = false;
    let t0 = Instant::now();
    let status = loop {
        while let Ok(chunk) = rx.try_recv() {
            shown.extend(chunk);
        }
        if !answered && String::from_utf8_lossy(&shown).contains(prompt) {
            master.write_all(answer.as_bytes()).unwrap();
            answered = true;
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("still running:\n{}", String::from_utf8_lossy(&shown));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the child wrote last, until the reader sees the terminal closed.
    while let Ok(chunk) = rx.recv_timeout(Duration::from_secs(2)) {
        shown.extend(chunk);
    }
    assert!(answered, "never asked {prompt:?}:\n{}", String::from_utf8_lossy(&shown));
    let text = String::from_utf8_lossy(&shown).replace("\r\n", "\n").replace('\x1b', "␛");
    (status.code().unwrap_or(-1), text)
}

#[test]
fn setup_cancelled_at_the_question_on_a_terminal() {
    // A node prefix of the test's own, so the npm the question names is the same everywhere;
    // a terminal wide enough that no line wraps (where a line wraps depends on the temp path's
    // length; wrapping at 80 columns is checked in setup.rs).
    // No provider usable: only then does setup ask (issue 38: 1.5.3 asks only then).
    let port = free_port();
    let t = TestContext::with_pinned_host();
    let bin = t.node_prefix();
    let node = bin.join("node");
    let args = [
        "setup",
        "--stack",
        "cx",
        "--port",
        &port.to_string(),
        "--node-bin",
        node.to_str().unwrap(),
    ];
    let before = crate::common::tree(&t.home);
    let (code, text) = on_terminal(&t, &args, 400, "[y/s/N]", "n\n");
    settings(&t, &[port]).bind(|| {
        insta::assert_snapshot!(
            "setup_cancelled_on_a_terminal",
            format!("$ oyster {}\nexit: {code}\n--- terminal\n{text}", args.join(" "))
        )
    });
    assert_eq!(code, 0);
    assert_eq!(crate::common::tree(&t.home), before, "a cancel changes nothing");
    t.assert_nothing_executed();
}

/// `open` hands the URL to `xdg-open` found on PATH (macOS's `/usr/bin/open` would open a
/// real browser, so this runs elsewhere only).
#[test]
#[cfg_attr(target_os = "macos", ignore = "opens a real browser with /usr/bin/open")]
fn open_with_and_without_an_opener() {
    let (mut t, port) = installed();
    snap("open_without_opener", &t, &["open", "snap"], &[port]).ok();
    let log = t.path("opened.log");
    let bin = t.path("bin");
    recorder(&bin.join("xdg-open"), &log);
    t.path_dirs.push(bin);
    snap("open_with_xdg_open", &t, &["open", "snap"], &[port]).ok();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("http://127.0.0.1:{port}\n"));
}

#[test]
fn qr_through_the_roots_entry_point_and_without_one() {
    let (t, port) = installed();
    snap("qr_older_root", &t, &["qr", "snap"], &[port]).fails_with(1);
    std::fs::write(
        t.path("root/host-service/setup.mjs"),
        "console.log('█▀▀▀▀▀█ login QR for port ' + process.env.OYSTERUN_PORT + ' (' + process.argv.slice(2).join(' ') + ')');\n",
    )
    .unwrap();
    snap("qr", &t, &["qr", "snap"], &[port]).ok();
}

#[test]
fn completions_and_the_man_page() {
    let t = TestContext::new();
    // The whole script: clap_complete generates it from the command tree, the same on
    // every machine, and a changed flag shows up here as a reviewed diff.
    let r = snap("completions_bash", &t, &["completions", "bash"], &[]).ok();
    assert!(
        r.stdout().contains("oyster __complete-stacks"),
        "--stack completes the stacks on this machine"
    );
    snap("man", &t, &["man"], &[]).ok();
    // `--dir`: every page written into the directory (what it says, and which files).
    let dir = t.path("man1");
    let r = snap("man_dir", &t, &["man", "--dir", dir.to_str().unwrap()], &[]).ok();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    settings(&t, &[]).bind(|| insta::assert_snapshot!("man_dir_pages", pages.join("\n")));
    assert_eq!(
        std::fs::read(dir.join("oyster.1")).unwrap(),
        t.run(["man"]).ok().0.stdout,
        "{}",
        r.stdout()
    );
}
