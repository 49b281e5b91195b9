//! The npm install a setup killed outright left running, as a real npm runs: npm (9 and later)
//! writes its process title (`npm install PACKAGE`) over its arguments once it runs, so the
//! kernel no longer shows the `install -g --prefix PREFIX PACKAGE` it was started with; and
//! npm's children (a lifecycle script) share its process group and may outlive it. The next
//! setup stops the whole group before it uninstalls, and signals nothing else.

use std::os::unix::fs::PermissionsExt;
#[cfg(target_os = "linux")]
use std::process::Command;
use std::time::Duration;

use crate::common::{has_all, real_node, wait_until};
use crate::setup::Setup;

/// Replaces the setup's fake npm with a Node one that does what npm does to its command line
/// (its title, over its arguments) and leaves a child in its group that ignores SIGTERM and
/// puts the provider's executable in place `late_secs` seconds later.
fn retitling_npm(s: &Setup, late_secs: u32) {
    let npm = format!(
        "#!{node}\n\
         const fs = require('fs'), cp = require('child_process');\n\
         const [verb, , , prefix, pkg] = process.argv.slice(2);\n\
         fs.appendFileSync('{log}', process.argv.slice(2).join(' ') + '\\n');\n\
         const b = pkg === '@anthropic-ai/claude-code' ? 'claude' : 'codex';\n\
         if (verb !== 'install') {{ fs.rmSync(prefix + '/bin/' + b, {{ force: true }}); process.exit(0); }}\n\
         process.title = 'npm install ' + pkg;\n\
         const late = `trap '' TERM; sleep {late_secs}; mkdir -p '${{prefix}}/bin'; \
         printf '#!/bin/sh\\n' > '${{prefix}}/bin/${{b}}'; chmod +x '${{prefix}}/bin/${{b}}'`;\n\
         cp.spawn('/bin/sh', ['-c', late], {{ stdio: 'ignore' }});\n\
         setTimeout(() => {{}}, 120000);\n",
        node = real_node().display(),
        log = s.t.path("npm.log").display(),
    );
    let path = s.t.path("nodepfx/bin/npm");
    std::fs::write(&path, npm).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Starts a setup that installs providers, waits until its receipt names the running npm,
/// and kills the setup outright: the receipt's text.
fn killed_during_npm(s: &Setup) -> String {
    let mut killed = s.spawn_quiet(&["--yes", "--install-providers"]);
    wait_until(Duration::from_secs(15), "npm's pid in the receipt", || {
        std::fs::read_to_string(s.receipt()).is_ok_and(|t| t.contains("\"running\""))
    });
    // Past the moment npm wrote its title.
    std::thread::sleep(Duration::from_millis(700));
    killed.kill().unwrap();
    killed.wait().unwrap();
    std::fs::read_to_string(s.receipt()).unwrap()
}

/// Kills a setup while its npm runs; the next setup (cancelled) stops that npm's group
/// before it uninstalls: once the orphan would have put a provider in place (`secs`), none is.
fn stopped_before_the_uninstall(s: &Setup, secs: u64) {
    killed_during_npm(s);
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap().to_owned();
    assert_eq!(r["code"], 0, "{output}");
    has_all(&output, &["stopped the npm install left running"]);
    std::thread::sleep(Duration::from_secs(secs));
    for b in ["claude", "codex"] {
        assert!(!s.t.path("nodepfx/bin").join(b).exists(), "{b} installed after:\n{output}");
    }
    assert!(!s.receipt().exists(), "{output}");
    s.t.wait_no_processes();
}

/// An npm seen as it was started (its arguments, no title written over them).
#[test]
fn an_npm_a_killed_setup_left_running_is_stopped_before_the_uninstall() {
    stopped_before_the_uninstall(&Setup::with_npm(0, 3), 4);
}

/// An npm as npm 9+ runs: its title over its arguments, and a child in its group that ignores
/// SIGTERM and would put claude in place 2 s later.
#[test]
fn an_npm_that_wrote_its_title_and_its_lingering_child_are_stopped_before_the_uninstall() {
    let s = Setup::with_npm(0, 0);
    retitling_npm(&s, 2);
    stopped_before_the_uninstall(&s, 3);
}

/// A receipt whose `running` names a process that is not the npm (forged, or a pid used
/// again): one with the same start time but another command line, one that does not lead its
/// own process group. Neither is signalled; the uninstall still runs.
#[cfg(target_os = "linux")]
#[test]
fn a_receipt_naming_another_process_signals_nothing() {
    let s = Setup::with_npm(0, 30);
    let text = killed_during_npm(&s);
    let npm: serde_json::Value = serde_json::from_str(&text).unwrap();
    let step = npm["steps"].as_array().unwrap().last().unwrap()["npm_uninstall"].clone();
    let (prefix, package) = (step["prefix"].as_str().unwrap(), step["package"].as_str().unwrap());
    // The npm the killed setup left: stopped here by the test, its own group.
    let left = step["running"]["pid"].as_i64().unwrap();
    Command::new("kill").args(["-KILL", "--", &format!("-{left}")]).status().unwrap();
    // A process that runs the same install's arguments in the test's group (it leads none).
    let mut bystander = Command::new("/bin/sh")
        .args(["-c", "sleep 60; :", "npm", "install", "-g", "--prefix", prefix, package]) // a fake
        .spawn()
        .unwrap();
    let started = start_time(bystander.id());
    let forged = text
        .replace(&format!("\"pid\": {left},"), &format!("\"pid\": {},", bystander.id()))
        .replace(
            &format!("\"started\": {}", step["running"]["started"]),
            &format!("\"started\": {started}"),
        );
    assert!(forged.contains(&format!("\"pid\": {},", bystander.id())), "{forged}");
    std::fs::write(s.receipt(), forged).unwrap();
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap().to_owned();
    assert_eq!(r["code"], 0, "{output}");
    has_all(&output, &["uninstalled @"]);
    crate::common::has_none(&output, &["stopped the npm install left running"]);
    assert!(bystander.try_wait().unwrap().is_none(), "the bystander was signalled:\n{output}");
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

#[cfg(target_os = "linux")]
/// A process's start time as sysinfo (and so oyster) gives it: seconds since the epoch, from
/// /proc's start ticks and the boot time.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let ticks: u64 = after.split(' ').nth(19).unwrap().parse().unwrap();
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("btime ").map(|v| v.trim().parse().unwrap()))
        .unwrap();
    boot + ticks / 100
}
