//! Setup's one question (issue 38, item 2): asked only when no provider is usable, as Oysterun
//! 1.5.3 asks; with one usable, a missing other one is a note with its install command and
//! setup goes on. The end of setup names every provider problem with its fix.

use crate::common::{self, free_port, TestContext};
use crate::common::{has_all, has_none};

const CANCELLED: &str = "Installation cancelled; no changes were made.";

fn setup_args(port: u16) -> Vec<String> {
    common::args(&["setup", "dev"]).port(port).wait(10, 300).into()
}

/// Setup on a terminal, typing `answer` at a `[y/s/N]` question and a password at the login
/// prompt.
fn on_a_terminal(t: &TestContext, answer: &[u8], port: u16) -> (serde_json::Value, String) {
    let mut c = t.pty_cmd(answer, setup_args(port));
    c.env("PTY_PASSWORD", "question test password");
    let r = common::pty_report(&mut c);
    let words = r["output"].as_str().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    (r, words)
}

#[test]
fn with_claude_usable_a_missing_codex_is_a_note_and_setup_goes_on() {
    let t = TestContext::with_claude();
    let port = free_port();
    let (r, out) = on_a_terminal(&t, b"\r", port);
    assert_eq!(r["prompted"], false, "no [y/s/N] question: {out}");
    assert_eq!(r["code"], 0, "{out}");
    has_none(&out, &[CANCELLED]);
    has_all(
        &out,
        &[
            "note: codex is not installed; it stays auto",
            "setup goes on with Claude Code; to install it: `",
            "install -g --prefix",
        ],
    );
    // The end names it again, with what to do.
    has_all(&out, &["provider: Codex CLI is not installed: the Host cannot use it until it is (`oyster setup --install-providers dev` installs it; `oyster providers set codex \"\" --stack dev` stops this note)"]);
    has_all(&out, &["Setup complete."]);
    assert_eq!(common::get(port, "/health"), 200);
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn with_nothing_usable_the_question_stays_and_enter_cancels_with_the_exact_words() {
    let t = TestContext::with_pinned_host();
    let (r, out) = on_a_terminal(&t, b"\r", free_port());
    assert_eq!(r["prompted"], true, "{out}");
    assert_eq!(r["code"], 0, "{out}");
    has_all(&out, &["[y/s/N]"]);
    assert!(out.trim_end().ends_with(CANCELLED), "{out}");
    t.assert_no_stack("dev", "Enter at the question changes nothing");
}

#[test]
fn the_end_of_setup_names_a_manual_command_that_points_at_nothing() {
    let t = TestContext::with_claude();
    let port = free_port();
    // codex: a manual command whose file is gone.
    let config = t.stack_dir("dev").join("host/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        r#"{"codex_command": "/opt/gone/codex", "provider_command_intent": {"codex": "manual"}}"#,
    )
    .unwrap();
    let r = t.run(common::args(&["setup", "dev"]).port(port).wait(10, 300)).ok();
    let out = r.stdout();
    let line =
        out.lines().find(|l| l.starts_with("provider: codex:")).unwrap_or_else(|| panic!("{out}"));
    has_all(line, &["/opt/gone/codex", "`oyster providers set codex /full/path --stack dev` or `oyster providers auto codex --stack dev`"]);
    assert!(!out.contains("provider: Claude Code"), "claude is fine: {out}");
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}
