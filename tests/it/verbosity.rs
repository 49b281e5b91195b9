//! `-q/--quiet` and `-v/--verbose` (issue 38, item 8): quiet prints nothing on stdout but what
//! was asked for; the proofs and the Host's PATH, which every restart printed, are verbose's.

use crate::common::{self, free_port, TestContext};

#[test]
fn a_restart_says_its_proofs_and_path_only_with_verbose() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    t.install("dev", port);
    let plain = t.run(common::args(&["restart", "dev"]).settle(200)).ok();
    plain.stdout_has("Host verified: com.oysterun.host.dev");
    plain.stdout_has(&format!("  url: http://127.0.0.1:{port}"));
    assert!(
        !plain.stdout().contains("PATH=") && !plain.stdout().contains("env_proof"),
        "{}",
        plain.stdout()
    );
    for flag in ["-v", "--verbose"] {
        let loud = t.run(common::args(&["restart", "dev", flag]).settle(200)).ok();
        loud.stdout_has("env_proof: ");
        loud.stdout_has("  PATH=");
    }
    // Before the verb too (a global flag), and -q: nothing on stdout or stderr, exit 0.
    let quiet = t.run(common::args(&["-q", "restart", "dev"]).settle(200)).ok();
    assert_eq!((quiet.stdout(), quiet.stderr()), (String::new(), String::new()));
    let quiet = t.run(["stop", "dev", "--quiet"]).ok();
    assert_eq!(quiet.stdout(), "");
    // What was asked for is still printed.
    t.run(["-q", "status", "dev"]).stdout_has("status:    stopped");
    // An error is still said.
    t.run(["-q", "restart", "nosuch"]).fails_with(2).stderr_has("nosuch");
    t.run(["-q", "-v", "status"]).fails_with(2);
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn quiet_setup_prints_nothing_when_it_completes() {
    let t = TestContext::with_pinned_host();
    let mut child = t
        .cmd()
        .args(
            common::args(&["setup", "dev", "-q", "--no-install-providers", "--password-stdin"])
                .port(free_port())
                .settle(200),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"quiet password\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    t.run(["status", "dev", "--json"]).ok();
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn oysteruns_own_words_and_stack_all_get_the_right_command() {
    let t = TestContext::new();
    for (typed, hint) in [
        (&["show-qr", "dev"][..], "try `oyster qr dev`"),
        (&["service:restart"][..], "try `oyster restart`"),
        (&["service:status"][..], "try `oyster status`"),
        (&["regenerate", "--stack", "dev"][..], "try `oyster agent regenerate --stack dev`"),
        (&["update"][..], "try `brew upgrade oyster`"),
        (&["upgrade"][..], "try `brew upgrade oyster`"),
        (&["status", "--stack", "all"][..], "`oyster status --all`"),
        (&["doctor", "all"][..], "`oyster doctor --all`"),
        (&["stop", "--stack", "all"][..], "`oyster stop --all`"),
        (&["logs", "--stack", "all"][..], "`oyster list` shows every stack"),
    ] {
        t.run(typed).fails_with(2).stderr_has(hint);
    }
}

/// `version -v` finds the root's version where Oysterun's own CLI does (1.5.3's
/// `bin/oysterun.mjs`: the root's `package.json`, else `host-service/package.json`, which is
/// where a checkout of 1.5.3 keeps it).
#[test]
fn version_verbose_finds_the_roots_version_where_oysteruns_cli_does() {
    let t = TestContext::with_pinned_host();
    t.run(common::args(&["config", "sync", "dev"]).port(free_port())).ok();
    std::fs::write(
        t.host_root().join("host-service/package.json"),
        r#"{"name": "oysterun-host-service", "version": "1.5.3"}"#,
    )
    .unwrap();
    std::fs::write(t.host_root().join("package.json"), r#"{"scripts": {}}"#).unwrap();
    t.run(["version", "-v"])
        .ok()
        .stdout_has_all(&[&format!("oysterun: {} 1.5.3", t.host_root().display())]);
}
