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

/// A private key the Host logs in PEM form (a device or relay key generated at first start):
/// its body lines are plain base64, no shape of their own, so each reached `logs` whole — on
/// lines of their own, and inside one JSON-logged string (`\n` escaped). Also when `-n` starts
/// inside the block, and with `-f` when the Host writes it line by line.
#[test]
fn logs_redacts_a_private_key_block_the_host_prints() {
    use std::io::Write;
    let t = TestContext::new();
    let body = [
        "MIIEowIBAAKCAQEAs3cr3tb0dyl1n3ZZ",
        "QQ8secretBodyLineNumberTwo+/xyz==",
    ];
    let log = format!(
        "generated device key\n-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----\n\
         {{\"msg\":\"key\",\"pem\":\"-----BEGIN PRIVATE KEY-----\\nMIIEvQjsonEscapedBody77\\n-----END PRIVATE KEY-----\\n\"}}\n\
         after the key\n",
        body[0], body[1]
    );
    let path = stack_with_log(&t, &log);
    let check = |what: &str, out: &str| {
        for secret in [body[0], body[1], "MIIEvQjsonEscapedBody77"] {
            assert!(!out.contains(secret), "{what} shows {secret:?}:\n{out}");
        }
    };
    let r = t.run(["logs", "--stack", "h3", "-n", "100"]).ok();
    let out = r.stdout();
    check("logs", &out);
    assert!(
        out.contains("-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n")
            && out.contains("after the key"),
        "{out}"
    );
    // `-n` starting inside the block: the lines before the window still say where it began.
    let r = t.run(["logs", "--stack", "h3", "-n", "4"]).ok();
    check("logs -n 4", &r.stdout());

    let mut follow = t
        .cmd()
        .args(["logs", "-f", "--stack", "h3", "-n", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = std::io::BufReader::new(follow.stdout.take().unwrap());
    let mut out = String::new();
    let mut read_until = |what: &str| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_secs(20) {
            let mut l = String::new();
            if std::io::BufRead::read_line(&mut reader, &mut l).unwrap_or(0) == 0 {
                break;
            }
            out.push_str(&l);
            if l.contains(what) {
                break;
            }
        }
    };
    read_until("after the key");
    let mut w = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for line in [
        "-----BEGIN EC PRIVATE KEY-----",
        "MHcCAQEEIFollowedBodyLineOne0",
        "-----END EC PRIVATE KEY-----",
        "end-of-test",
    ] {
        w.write_all(format!("{line}\n").as_bytes()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    read_until("end-of-test");
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(out.contains("end-of-test"), "{out}");
    assert!(
        !out.contains("MHcCAQEEIFollowedBodyLineOne0"),
        "logs -f shows the key:\n{out}"
    );
}
