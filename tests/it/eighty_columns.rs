//! An 80-column terminal (issue 38, item 9): the Host's log lines are never re-flowed by
//! `logs` (the terminal wraps them; a copied line stays whole), and a wrapped line keeps the
//! runs of spaces that align its columns (`output::wrap`'s unit tests).

use std::io::Read;

use crate::common::TestContext;

#[test]
fn logs_never_reflows_the_hosts_lines_on_a_narrow_terminal() {
    let t = TestContext::with_stack_config("dev");
    let long = format!("host says {}end-of-line", "word    aligned  ".repeat(10));
    t.write_host_log("dev", &format!("{long}\n"));
    let (mut child, mut master) = t.spawn_on_pty(&["logs", "dev", "-n", "5"], Some(80));
    let mut shown = vec![];
    let mut buf = [0u8; 4096];
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        shown.extend_from_slice(&buf[..n]);
    }
    child.wait().unwrap();
    let shown = String::from_utf8_lossy(&shown).replace("\r\n", "\n");
    assert!(
        shown.lines().any(|l| crate::common::strip_ansi(l) == long),
        "the line was re-flowed:\n{shown}"
    );
}
