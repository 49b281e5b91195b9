//! The Host's declared environment (`oyster env`, issue 41; docs/behaviour.md "Declared
//! environment") through the binary under the launchd simulator: a declared proxy reaches the
//! live Host and never the plist; a secret value is in no file but the 0600 env file and in
//! no output; a group/world-writable file is refused (the Host starts without it, status and
//! doctor say why); names oyster owns are refused, writing nothing; a forced value wins and
//! cannot be changed; status calls a Host stale after `env set` until `restart`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::{doctor_check, live_environ, tree, Run, Stack, TestContext};
use crate::common::{has_all, has_none};

const SECRET: &str = "s3cret-Pr0xy-pw";

fn proxy() -> String {
    format!("http://alice:{SECRET}@proxy.corp.example:3128")
}

/// `oyster WORDS` with `stdin` as its standard input.
fn with_stdin(t: &TestContext, words: &[&str], stdin: &str) -> Run {
    t.run_with_stdin(words, stdin.as_bytes())
}

fn env_file(s: &Stack) -> PathBuf {
    s.stack_dir().join("host/oyster-host.env")
}

fn host_pid(s: &Stack) -> u32 {
    u32::try_from(s.status()["pid"].as_u64().expect("a running Host")).unwrap()
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    tree(dir)
        .into_iter()
        .filter(|(_, e)| !e.dir && String::from_utf8_lossy(&e.content).contains(needle))
        .map(|(p, _)| p)
        .collect()
}

/// What every reading command prints about the stack, stdout and stderr, human and JSON.
fn everything_said(s: &Stack) -> String {
    let mut said = String::new();
    for words in [
        &["status", s.name][..],
        &["status", s.name, "--json"],
        &["list", "--json"],
        &["doctor", s.name],
        &["doctor", s.name, "--json"],
        &["env", "list", s.name],
        &["env", "list", s.name, "--json"],
        &["config", "show", s.name, "--json"],
        &["logs", s.name, "-n", "200"],
        &["agent", "print", "--stack", s.name],
    ] {
        let r = s.t.run(words);
        said.push_str(&r.stdout());
        said.push_str(&r.stderr());
    }
    said
}

#[test]
fn a_declared_proxy_reaches_the_live_host_never_the_plist_and_no_output() {
    let s = Stack::installed("decl");
    let r = with_stdin(
        &s.t,
        &["env", "set", "HTTPS_PROXY", "--value-stdin", "--stack", s.name],
        &format!("{}\n", proxy()),
    )
    .ok();
    r.stdout_has("declared HTTPS_PROXY for stack decl");
    r.stdout_has("`oyster restart --stack decl` applies it (or run this command with --restart)");
    assert!(!r.stdout().contains(SECRET));
    // Declared, not yet applied: the running Host is stale, by name.
    let st = s.status();
    assert_eq!(st["summary"], "stale", "{st}");
    assert_eq!(st["verified"], true, "{st}");
    assert_eq!(st["declared"], serde_json::json!(["HTTPS_PROXY"]), "{st}");
    assert_eq!(st["declared_stale"], serde_json::json!(["HTTPS_PROXY"]), "{st}");
    assert!(st["notes"].to_string().contains("oyster restart decl"), "{st}");
    // The restart applies it: the live Host has it, verified, no longer stale.
    let r = s.t.run(["restart", s.name, "--wait", "10", "--settle-ms", "300"]).ok();
    assert!(!r.stdout().contains(SECRET), "{}", r.stdout());
    let pid = host_pid(&s);
    let want = format!("HTTPS_PROXY={}", proxy());
    assert!(live_environ(pid).contains(&want), "the Host lacks the proxy");
    let st = s.status();
    assert_eq!(
        (st["summary"].as_str(), st["declared_stale"].as_array().map(Vec::len)),
        (Some("verified"), Some(0)),
        "{st}"
    );
    // Never in the plist, the exec record or any file but the 0600 env file; in no output.
    let plist = std::fs::read_to_string(s.plist()).unwrap();
    assert!(!plist.contains("HTTPS_PROXY") && !plist.contains(SECRET));
    assert_eq!(files_holding(&s.t.home, SECRET), vec![env_file(&s)]);
    let mode = std::fs::metadata(env_file(&s)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let record = std::fs::read_to_string(s.run_dir().join("oyster-exec.json")).unwrap();
    has_all(&record, &["\"declared\"", "HTTPS_PROXY"]);
    let said = everything_said(&s);
    assert!(!said.contains(SECRET), "a value was shown:\n{said}");
    assert!(said.contains("HTTPS_PROXY"), "the name is shown");
    // unset --restart: the Host loses it at once.
    let r = s.t.run(["env", "unset", "HTTPS_PROXY", "--stack", s.name, "--restart"]).ok();
    r.stdout_has("removed HTTPS_PROXY");
    let pid = host_pid(&s);
    assert!(!live_environ(pid).iter().any(|kv| kv.starts_with("HTTPS_PROXY=")));
    assert_eq!(s.status()["summary"], "verified");
    s.done();
}

#[test]
fn the_exec_record_proves_declared_values_by_fingerprint_and_a_change_is_stale() {
    let mut s = Stack::installed("declexec");
    s.t.extra_env.push(("OYSTER_ENV_PROOF".into(), "exec".into()));
    let set = |v: &str| {
        s.t.run(["-v", "env", "set", "NODE_EXTRA_CA_CERTS", v, "--stack", s.name, "--restart"]).ok()
    };
    set("/etc/ssl/one.pem").stdout_has("env_proof: exec");
    let st = s.status();
    assert_eq!(
        (st["summary"].as_str(), st["env_proof"].as_str()),
        (Some("verified"), Some("exec")),
        "{st}"
    );
    s.t.run([
        "env",
        "set",
        "NODE_EXTRA_CA_CERTS",
        "/etc/ssl/two.pem",
        "--stack",
        s.name,
        "--no-restart",
    ])
    .ok();
    let st = s.status();
    assert_eq!(st["summary"], "stale", "{st}");
    assert_eq!(st["declared_stale"], serde_json::json!(["NODE_EXTRA_CA_CERTS"]), "{st}");
    // Removed while the Host still has it: stale too.
    set("/etc/ssl/two.pem");
    s.t.run(["env", "unset", "NODE_EXTRA_CA_CERTS", "--stack", s.name, "--no-restart"]).ok();
    assert_eq!(s.status()["declared_stale"], serde_json::json!(["NODE_EXTRA_CA_CERTS"]));
    let record = std::fs::read_to_string(s.run_dir().join("oyster-exec.json")).unwrap();
    has_none(&record, &["two.pem"]);
    s.done();
}

#[test]
fn refused_names_values_and_files_write_nothing() {
    let s = Stack::installed("declbad");
    let before = tree(&s.stack_dir().join("host"));
    for (words, says) in [
        (&["env", "set", "PATH", "/x"][..], "PATH is oyster's to set"),
        (&["env", "set", "OYSTERUN_PORT", "1"], "OYSTERUN_PORT is oyster's to set"),
        (&["env", "set", "HOME", "/tmp"], "HOME is oyster's to set"),
        (&["env", "set", "BAD-NAME", "x"], "is not a variable name"),
        (&["env", "unset", "TMPDIR"], "TMPDIR is oyster's to set"),
    ] {
        let mut w = words.to_vec();
        w.extend(["--stack", s.name]);
        s.t.run(&w).fails_with(2).stderr_has(says).stderr_has("nothing was changed");
    }
    let r = with_stdin(
        &s.t,
        &["env", "set", "X", "--value-stdin", "--stack", s.name],
        &format!("{SECRET}\nsecond line\n"),
    )
    .fails_with(2);
    r.stderr_has("line break");
    assert!(!r.stderr().contains(SECRET));
    assert_eq!(tree(&s.stack_dir().join("host")), before, "a refusal wrote");

    // A file others can write: `env set` refuses it, the Host starts without it, and
    // status and doctor say why with the fix.
    s.t.run(["env", "set", "HTTP_PROXY", &proxy(), "--stack", s.name, "--no-restart"]).ok();
    let file = env_file(&s);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    s.t.run(["env", "set", "Y", "1", "--stack", s.name])
        .fails_with(2)
        .stderr_has("is writable by others (mode 0666)")
        .stderr_has("hint: chmod 600 ~/.oysterun-stacks/declbad/host/oyster-host.env");
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    s.t.run(["restart", s.name, "--wait", "10", "--settle-ms", "300"]).ok();
    let pid = host_pid(&s);
    assert!(!live_environ(pid).iter().any(|kv| kv.starts_with("HTTP_PROXY=")));
    let st = s.status();
    assert_eq!(st["verified"], true, "{st}");
    assert!(st["notes"].to_string().contains("the declared environment is not used"), "{st}");
    let doc = s.t.run(["doctor", s.name, "--json"]).json();
    let c = doctor_check(&doc, "declared environment");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(c["fix"].as_str().unwrap().starts_with("chmod 600"), "{c}");
    assert!(s.host_log().contains("the declared environment is not used"));
    assert!(!s.host_log().contains(SECRET));
    s.done();
}

#[test]
fn a_forced_variable_wins_and_cannot_be_changed_or_unset() {
    let mut s = Stack::new("declmdm");
    // The launch program reads the same profile: on a Mac, /Library/Managed Preferences; here
    // the directory standing in for it, as `launchctl setenv` would give every job.
    let forced = [("HTTPS_PROXY", "http://forced.corp.example:8080"), ("PATH", "/evil")];
    let profile = s.t.forced_environment(&forced);
    s.t.run(s.args("install")).ok();
    // The user's own value loses to the organization's.
    std::fs::write(env_file(&s), "HTTPS_PROXY=http://mine:1\nNO_PROXY=127.0.0.1,localhost\n")
        .unwrap();
    std::fs::set_permissions(env_file(&s), std::fs::Permissions::from_mode(0o600)).unwrap();
    for words in
        [&["env", "set", "HTTPS_PROXY", "http://x:1"][..], &["env", "unset", "HTTPS_PROXY"]]
    {
        let mut w = words.to_vec();
        w.extend(["--stack", s.name]);
        s.t.run(&w)
            .fails_with(1)
            .stderr_has("HTTPS_PROXY is managed by your organization")
            .stderr_has(&profile.display().to_string());
    }
    let list = s.t.run(["env", "list", s.name, "--json"]).ok().json();
    let vars = list["variables"].as_array().unwrap();
    let forced = vars.iter().find(|v| v["name"] == "HTTPS_PROXY").unwrap();
    assert_eq!(forced["origin"], "managed", "{list}");
    assert!(!vars.iter().any(|v| v["name"] == "PATH"), "a reserved name was forced");
    assert!(!list.to_string().contains("forced.corp"), "{list}");
    s.t.run(["restart", s.name, "--wait", "10", "--settle-ms", "300"]).ok();
    let live = live_environ(host_pid(&s));
    assert!(live.contains(&"HTTPS_PROXY=http://forced.corp.example:8080".to_owned()));
    assert!(live.contains(&"NO_PROXY=127.0.0.1,localhost".to_owned()));
    assert!(!live.iter().any(|kv| kv == "PATH=/evil"));
    let said = everything_said(&s);
    assert!(!said.contains("forced.corp"), "a forced value was shown:\n{said}");
    has_all(&said, &["environment: PATH is oyster's to set", "environment HTTPS_PROXY ("]);
    s.done();
}

#[test]
fn doctor_checks_the_ca_file_the_proxy_url_and_no_proxy_without_a_network() {
    let t = TestContext::with_pinned_host_no_launchd();
    let set = |k: &str, v: &str| t.run(["env", "set", k, v]).ok();
    set("NODE_EXTRA_CA_CERTS", "/nonexistent/ca.pem");
    set("HTTPS_PROXY", "proxy.corp:3128");
    let doc = t.run(["doctor", "--json"]).json();
    assert_eq!(doc["declared"], serde_json::json!(["HTTPS_PROXY", "NODE_EXTRA_CA_CERTS"]));
    let checks = doc["checks"].as_array().unwrap();
    let find = |name: &str, status: &str| {
        checks.iter().any(|c| c["check"] == name && c["status"] == status)
    };
    assert!(find("CA certificates", "fail"), "{doc}");
    assert!(find("proxy", "fail"), "{doc}");
    assert!(find("proxy", "warn"), "NO_PROXY lacks the Host's own names: {doc}");
    assert!(!doc.to_string().contains("/nonexistent"), "{doc}");
    let pem = t.path("ca.pem");
    std::fs::write(&pem, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").unwrap();
    set("NODE_EXTRA_CA_CERTS", pem.to_str().unwrap());
    set("HTTPS_PROXY", "http://proxy.corp:3128");
    set("NO_PROXY", "127.0.0.1,localhost,.corp");
    let doc = t.run(["doctor", "--json"]).json();
    assert_eq!(doctor_check(&doc, "CA certificates")["status"], "ok", "{doc}");
    assert_eq!(doctor_check(&doc, "proxy")["status"], "ok", "{doc}");
    assert_eq!(doctor_check(&doc, "declared environment")["status"], "ok", "{doc}");
}

/// `setup STACK --port P --no-install-providers`, waiting briefly.
fn setup_args(name: &str) -> Vec<String> {
    crate::common::args(&["setup", "--no-install-providers"])
        .stack(name)
        .port(crate::common::free_port())
        .wait(10, 300)
        .into()
}

#[test]
fn setup_notices_the_shells_proxy_and_never_inherits_it() {
    let mut t = TestContext::with_claude();
    t.extra_env.push(("HTTPS_PROXY".into(), proxy()));
    t.extra_env.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
    let r = t.run(setup_args("declsetup")).ok();
    r.stdout_has("Your shell has HTTPS_PROXY (http://<redacted>@proxy.corp.example:3128), NO_PROXY (127.0.0.1,localhost); the Host never inherits");
    r.stdout_has("To give them to the Host: `oyster env set NAME --value-stdin --stack declsetup` for each of HTTPS_PROXY, NO_PROXY");
    assert!(!r.stdout().contains(SECRET) && !r.stderr().contains(SECRET));
    assert!(!t.stack_dir("declsetup").join("host/oyster-host.env").exists());
    let st = t.run(["status", "declsetup", "--json"]).json();
    let pid = u32::try_from(st["pid"].as_u64().unwrap()).unwrap();
    assert!(
        !live_environ(pid).iter().any(|kv| kv.starts_with("HTTPS_PROXY=")),
        "the Host inherited the caller's proxy"
    );
    t.run(["uninstall", "declsetup"]).ok();
}

#[test]
fn setup_on_a_terminal_declares_the_shells_proxy_on_yes_and_restarts_the_host() {
    let mut t = TestContext::with_claude();
    t.extra_env.push(("HTTPS_PROXY".into(), proxy()));
    // A login already set: setup's only question is the declared environment's.
    let config = t.home.join(".oysterun-stacks/declpty/host/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        r#"{"dashboard_user": "admin", "dashboard_password_hash": "scrypt$N=1$abc$def"}"#,
    )
    .unwrap();
    let r = t.pty(b"y\n", setup_args("declpty"));
    let said = r["output"].as_str().unwrap_or_default().to_owned();
    assert!(said.contains("Declare them for the Host"), "{r}");
    has_all(&said, &["declared HTTPS_PROXY for stack declpty"]);
    has_none(&said, &[SECRET]);
    let st = t.run(["status", "declpty", "--json"]).json();
    assert_eq!(st["summary"], "verified", "{st}");
    let pid = u32::try_from(st["pid"].as_u64().unwrap()).unwrap();
    assert!(live_environ(pid).contains(&format!("HTTPS_PROXY={}", proxy())));
    t.run(["uninstall", "declpty"]).ok();
}

#[test]
fn a_directly_started_host_gets_them_too_and_is_stale_after_a_change() {
    let t = TestContext::with_pinned_host_no_launchd();
    let port = crate::common::free_port().to_string();
    t.run(["env", "set", "HTTP_PROXY", &proxy()]).ok();
    t.run(["host", "start", "--port", &port, "--wait", "10", "--settle-ms", "300"]).ok();
    let st = t.run(["status", "--json"]).json();
    assert_eq!(st["summary"], "direct", "{st}");
    let pid = u32::try_from(st["pid"].as_u64().unwrap()).unwrap();
    assert!(live_environ(pid).contains(&format!("HTTP_PROXY={}", proxy())));
    t.run(["env", "set", "HTTP_PROXY", "http://other:3128"])
        .ok()
        .stdout_has("`oyster host stop` then `oyster host start`");
    let st = t.run(["status", "--json"]).json();
    assert_eq!(
        (st["summary"].as_str(), &st["declared_stale"]),
        (Some("stale"), &serde_json::json!(["HTTP_PROXY"])),
        "{st}"
    );
    t.run(["host", "stop"]).ok();
}
