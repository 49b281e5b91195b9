//! A plist deleted under its loaded job (issue 38, item 3): `stop` boots the job out by label
//! (as `brew services` does), `restart` and `start` write the plist again, `host stop` points
//! at `stop` (never back and forth), and `doctor` fails naming the state and the fix.

use crate::common::{self, free_port, TestContext};

/// A verified `dev` whose plist was then deleted: the context and the plist's path.
fn loaded_without_its_plist() -> (TestContext, std::path::PathBuf, u16) {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    t.install("dev", port);
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.dev.plist");
    std::fs::remove_file(&plist).unwrap();
    (t, plist, port)
}

#[test]
fn doctor_fails_naming_the_deleted_plist_and_the_fix() {
    let (t, plist, _) = loaded_without_its_plist();
    let doc = t.run(["doctor", "dev", "--json"]).fails_with(1).json();
    let row = common::doctor_check(&doc, "plist");
    assert_eq!(row["status"], "fail", "{row}");
    assert!(
        row["detail"]
            .as_str()
            .unwrap()
            .contains("was deleted while com.oysterun.host.dev is loaded"),
        "{row}"
    );
    assert_eq!(
        row["fix"],
        "`oyster restart dev` writes the plist again and restarts the Host (or `oyster stop dev` stops it for good)"
    );
    let st = t.run(["status", "dev", "--json"]).json();
    assert!(st["notes"].to_string().contains("was deleted while the job is loaded"), "{st}");
    // `host stop` says `stop`, and `stop` does it (no loop between them).
    t.run(["host", "stop", "dev"]).fails_with(1).stderr_has("`oyster stop dev` stops it");
    let r = t.run(["stop", "dev"]).ok();
    r.stdout_has("Stopped com.oysterun.host.dev (pid");
    r.stdout_has("was already deleted; `oyster install dev` writes it again and starts it.");
    let st = t.run(["status", "dev", "--json"]).json();
    assert_eq!(
        (st["loaded"].as_bool(), st["running"].as_bool()),
        (Some(false), Some(false)),
        "{st}"
    );
    assert!(!plist.exists());
    // The command it names does what it says (before, it named `start`, which refuses a
    // stack with no plist as "not installed": a dead end).
    let named = r
        .stdout()
        .split("was already deleted; `oyster ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap()
        .to_owned();
    let words: Vec<&str> = named.split_whitespace().collect();
    t.run(common::args(&words).settle(200)).ok().stdout_has("Host verified");
    assert!(plist.exists());
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn restart_and_start_write_the_deleted_plist_again() {
    let (t, plist, port) = loaded_without_its_plist();
    t.run(common::args(&["restart", "dev"]).settle(200)).ok().stdout_has("Host verified");
    assert!(plist.exists(), "restart wrote the plist again");
    assert_eq!(common::get(port, "/health"), 200);
    std::fs::remove_file(&plist).unwrap();
    t.run(common::args(&["start", "dev"]).settle(200)).ok().stdout_has("Host verified");
    assert!(plist.exists(), "start wrote the plist again");
    let doc = t.run(["doctor", "dev", "--json"]).json();
    assert_eq!(common::doctor_check(&doc, "plist")["status"], "ok");
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}
