//! Hostile round 3 over issues 29 and 30 as they stand on main: each test here failed before
//! its fix (docs/bad-input.md, "Hostile round 3").

use crate::common::TestContext;

/// A known stack `h3` with no Host, its log holding `log`.
fn stack_with_log(t: &TestContext, log: &str) -> std::path::PathBuf {
    let dir = t.home.join(".oysterun-stacks/h3");
    std::fs::create_dir_all(dir.join("host")).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("host/config.json"), "{}\n").unwrap();
    let path = dir.join("logs/oysterun-host.log");
    std::fs::write(&path, log).unwrap();
    path
}

/// The Host is Node: `console.log(req.headers)` or `console.log(process.env)` prints objects
/// the way `util.inspect` does — unquoted keys, single-quoted values. Those credentials reached
/// `logs` whole: `authorization: 'Basic …'`, `{ apiKey: '…', password: '…' }`, and
/// `authorization='Basic …'` although `authorization=` is one of the README's shapes.
#[test]
fn logs_redacts_credentials_in_nodes_printed_objects() {
    let t = TestContext::new();
    let log = [
        "headers: { host: 'localhost', authorization: 'Basic dXNlcjpwYXNzd29yZDEyMw==' }",
        "{ apiKey: 'plainapikeyvalue1', password: 'hunter2hunter2', token: \"tok-quoted-123\" }",
        "env { HOME: '/Users/me', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMIK7MDENG' }",
        "curl -H authorization='Basic c2Vjb25kOnBhc3N3b3Jk'",
        "{ key: 'name', error: 'file not found', device_token: null }",
    ]
    .map(|l| format!("{l}\n"))
    .concat();
    stack_with_log(&t, &log);
    let r = t.run(["logs", "--stack", "h3", "-n", "100"]).ok();
    let out = r.stdout() + &r.stderr();
    for secret in [
        "dXNlcjpwYXNzd29yZDEyMw",
        "plainapikeyvalue1",
        "hunter2hunter2",
        "tok-quoted-123",
        "wJalrXUtnFEMIK7MDENG",
        "c2Vjb25kOnBhc3N3b3Jk",
    ] {
        assert!(!out.contains(secret), "logs shows {secret:?}:\n{out}");
    }
    for kept in [
        "headers: { host: 'localhost', authorization: 'Basic <redacted>' }",
        "{ apiKey: '<redacted>', password: '<redacted>', token: \"<redacted>\" }",
        "env { HOME: '/Users/me', AWS_SECRET_ACCESS_KEY: '<redacted>' }",
        "curl -H authorization='Basic <redacted>'",
        // Names that are not secrets, and a bare `key`, stay as written.
        "{ key: 'name', error: 'file not found', device_token: null }",
    ] {
        assert!(out.contains(kept), "{kept:?} not in:\n{out}");
    }
}
