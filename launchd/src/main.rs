//! `launchctl-sim`: a `launchctl`-compatible stand-in for per-user launchd, so oyster's
//! lifecycle runs for real off macOS. See `launchd/README.md` for what it models and what not.
//!
//! `enable`, `disable` and `print-disabled` are answered here from the state directory; every
//! job verb goes to the supervisor daemon for that directory, started on demand.

mod daemon;
mod job;
mod listing;
mod proto;
mod state;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use proto::{Reply, Request};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("__daemon") {
        let dir = args.get(1).map(PathBuf::from).unwrap_or_else(state_dir);
        return match daemon::run(&dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("launchctl-sim daemon: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut reply = dispatch(args);
    // launchctl suggests root for a bare 5 only to a caller that is not root
    // (Homebrew/homebrew-services#528 has it; nix-installer#1157, as root, does not).
    if reply.code == 5 && proto::caller_is_root(&knobs()) {
        reply.stderr = reply.stderr.replace(proto::ROOT_HINT, "");
    }
    print!("{}", reply.stdout);
    eprint!("{}", reply.stderr);
    let _ = std::io::stdout().flush();
    ExitCode::from(u8::try_from(reply.code).unwrap_or(1))
}

/// `$LAUNCHD_SIM_STATE`, or `$HOME/.launchd-sim`.
fn state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LAUNCHD_SIM_STATE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".launchd-sim")
}

fn knobs() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("LAUNCHD_SIM_"))
        .collect()
}

fn dispatch(args: Vec<String>) -> Reply {
    let knobs = knobs();
    let state = state_dir();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        [] | ["help"] => Reply::raw(
            64,
            "Usage: launchctl <subcommand> ... | help [subcommand]\n",
        ),
        [verb @ ("enable" | "disable"), target] => {
            let Some((d, Some(label))) = proto::parse_target(target) else {
                return Reply::usage(&format!("{verb} <service-target>"));
            };
            if let Err(code) = proto::check_domain(&d, &knobs) {
                return proto::domain_error(verb, &d, code);
            }
            // An override something else holds (a configuration profile): `enable` answers 0
            // and the label stays disabled.
            if *verb == "enable" && knobs.contains_key("LAUNCHD_SIM_ENABLE_IGNORED") {
                return Reply::ok("");
            }
            match state::set_disabled(&state, d.uid, &label, *verb == "disable") {
                Ok(()) => Reply::ok(""),
                Err(e) => Reply::raw(1, format!("{verb}: {e}\n")),
            }
        }
        ["print-disabled", domain] => {
            let Some((d, None)) = proto::parse_target(domain) else {
                return Reply::usage("print-disabled <domain-target>");
            };
            // The cheap domain probe: the same 112/125 as `print` of the domain.
            if let Err(code) = proto::check_domain(&d, &knobs) {
                return proto::domain_error("print-disabled", &d, code);
            }
            Reply::ok(print_disabled(
                state::overrides(&state, d.uid).as_ref(),
                knobs
                    .get("LAUNCHD_SIM_PRINT_DISABLED_STYLE")
                    .map_or("", String::as_str),
            ))
        }
        // The simulator's own Login Items switch, and what ServiceManagement answers.
        ["login-item", label, word @ ("on" | "off" | "hang")] => {
            let uid = nix::unistd::getuid().as_raw();
            match state::set_login_item(&state, uid, label, word) {
                Ok(()) => Reply::ok(""),
                Err(e) => Reply::raw(1, format!("login-item: {e}\n")),
            }
        }
        ["login-item-status", plist] => login_item_status(&state, plist, &knobs),
        // `login` is the simulator's own verb (a console login); it needs the daemon too.
        ["bootstrap", _, _] | ["login", _] => send(&state, args.clone(), knobs, true),
        ["kill", signal, target] => match send(&state, args.clone(), knobs.clone(), false) {
            // No daemon: nothing is loaded.
            r if r.code == -1 => kill_not_loaded(signal, target, &knobs),
            r => r,
        },
        [verb @ ("bootout" | "kickstart" | "print"), ..] => {
            if *verb == "print" && a.len() == 2 {
                if let Some((d, None)) = proto::parse_target(a[1]) {
                    // A domain print answers without a daemon.
                    if let Err(code) = proto::check_domain(&d, &knobs) {
                        return proto::domain_error("print", &d, code);
                    }
                }
            }
            match send(&state, args.clone(), knobs.clone(), false) {
                // No daemon: nothing is loaded.
                r if r.code == -1 => not_loaded(verb, &a, &knobs),
                r => r,
            }
        }
        // The legacy listing of the caller's session; `list LABEL` is not modelled.
        ["list"] => match send(&state, args.clone(), knobs.clone(), false) {
            r if r.code == -1 => Reply::ok(listing::list(&[])),
            r => r,
        },
        _ => Reply::usage(&format!("unrecognized subcommand: {}", args.join(" "))),
    }
}

/// What ServiceManagement's `SMAppService.statusForLegacyPlist(at:)` answers for a plist, as
/// one word on stdout (`enabled`, `requires approval`, `not found`): the user's switch in
/// System Settings → General → Login Items (`off`: switched off, or never approved); `hang`
/// never answers (a wedged Background Task Management daemon); `LAUNCHD_SIM_LOGIN_ITEMS=
/// unavailable` answers as a Mac without the API (exit 69).
fn login_item_status(state: &Path, plist: &str, knobs: &BTreeMap<String, String>) -> Reply {
    if knobs.get("LAUNCHD_SIM_LOGIN_ITEMS").map(String::as_str) == Some("unavailable") {
        return Reply::raw(
            69,
            "login-item-status: ServiceManagement is not available\n",
        );
    }
    let uid = nix::unistd::getuid().as_raw();
    let label = job::read_label(Path::new(plist));
    let switch = label.as_deref().map(|l| state::login_item(state, uid, l));
    if switch.as_deref() == Some("hang") {
        // ServiceManagement's query has no time limit: it never answers.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let word = match switch.as_deref() {
        None => "not found",
        Some("off") => "requires approval",
        Some(_) => "enabled",
    };
    Reply::ok(format!("{word}\n"))
}

/// `kill` when no daemon runs: the same checks as the daemon's, then 113.
fn kill_not_loaded(signal: &str, target: &str, knobs: &BTreeMap<String, String>) -> Reply {
    if proto::parse_signal(signal).is_none() {
        return Reply::raw(64, "Invalid signal.\n");
    }
    let Some((d, Some(label))) = proto::parse_target(target) else {
        return Reply::usage("kill <signal-name|signal-number> <service-target>");
    };
    if let Err(code) = proto::check_domain(&d, knobs) {
        return proto::domain_error("kill", &d, code);
    }
    Reply::raw(113, proto::not_found_line(&label, &d))
}

/// `print-disabled DOMAIN`: `"label" => disabled|enabled` (macOS 13–15, the default),
/// `=> true|false` through macOS 12 (`style` `bool`), and macOS 26's layout (`macos26`): the
/// words of 13–15 after a blank line, every line indented by one more tab.
fn print_disabled(overrides: Option<&BTreeMap<String, bool>>, style: &str) -> String {
    let mut lines = vec!["disabled services = {".to_owned()];
    for (label, disabled) in overrides.into_iter().flatten() {
        let word = match (style == "bool", disabled) {
            (true, true) => "true",
            (true, false) => "false",
            (false, true) => "disabled",
            (false, false) => "enabled",
        };
        lines.push(format!("\t\"{label}\" => {word}"));
    }
    lines.push("}".to_owned());
    if style == "macos26" {
        let mut out = String::from("\n");
        for l in lines {
            out += &format!("\t{l}\n");
        }
        return out;
    }
    lines.join("\n") + "\n"
}

/// The answer when no daemon runs (so nothing is loaded).
fn not_loaded(verb: &str, a: &[&str], knobs: &BTreeMap<String, String>) -> Reply {
    let flags_ok = |f: &&str| verb == "kickstart" && proto::kickstart_flags(f);
    if a.iter().skip(1).any(|s| s.starts_with('-') && !flags_ok(s)) {
        if verb == "bootout" {
            return Reply::bootout_usage();
        }
        return Reply::usage(&format!("{verb}: unrecognized option"));
    }
    let target = a
        .iter()
        .skip(1)
        .find(|s| !s.starts_with('-'))
        .copied()
        .unwrap_or("");
    let Some((d, label)) = proto::parse_target(target) else {
        if verb == "bootout" {
            return Reply::bootout_usage();
        }
        return Reply::usage(&format!("{verb} <target>"));
    };
    if let Err(code) = proto::check_domain(&d, knobs) {
        return proto::domain_error(verb, &d, code);
    }
    match (verb, label) {
        ("print", None) => Reply::ok(listing::domain_print(
            &d,
            &[],
            state::overrides(&state_dir(), d.uid).as_ref(),
            knobs
                .get("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS")
                .map(String::as_str),
        )),
        ("bootout", Some(_)) => Reply::failed("Boot-out", proto::bootout_not_loaded_code(knobs)),
        ("bootout", None) => match a.get(2) {
            Some(plist) => proto::missing_plist(plist).unwrap_or_else(|| {
                let code = knobs
                    .get("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE")
                    .map_or(113, |_| proto::bootout_not_loaded_code(knobs));
                Reply::failed("Boot-out", code)
            }),
            // Booting out a whole domain (a logout) is not modelled.
            None => Reply::bootout_usage(),
        },
        (_, Some(label)) => proto::not_found(&label, &d),
        (_, None) => Reply::usage(&format!("{verb} <service-target>")),
    }
}

/// Sends a request to the daemon; starts it first when `start` is set. `code == -1` means no
/// daemon was running and none was started.
fn send(state: &Path, args: Vec<String>, knobs: BTreeMap<String, String>, start: bool) -> Reply {
    let req = Request {
        args,
        knobs,
        stdout_tty: std::io::stdout().is_terminal(),
    };
    let line = serde_json::to_string(&req).unwrap_or_default() + "\n";
    let sock = state.join("daemon.sock");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut started = false;
    loop {
        if let Ok(stream) = UnixStream::connect(&sock) {
            if let Some(reply) = exchange(&stream, &line) {
                return reply;
            }
            // The daemon closed without answering (it was exiting): try again.
        } else if !start {
            return Reply::raw(-1, "");
        } else if !started {
            if let Err(e) = spawn_daemon(state) {
                return Reply::raw(
                    1,
                    format!("launchctl-sim: could not start the daemon: {e}\n"),
                );
            }
            started = true;
        }
        if Instant::now() >= deadline {
            return Reply::raw(1, "launchctl-sim: the daemon did not answer\n");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn exchange(stream: &UnixStream, line: &str) -> Option<Reply> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut w = stream;
    w.write_all(line.as_bytes()).ok()?;
    let mut out = String::new();
    BufReader::new(stream).read_line(&mut out).ok()?;
    serde_json::from_str(&out).ok()
}

fn spawn_daemon(state: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(state)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(state.join("daemon.log"))?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("__daemon")
        .arg(state)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed; setsid(2) is one, and the closure touches no memory of the parent. The
    // daemon leads its own session so it outlives this client's.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            Ok(())
        });
    }
    // The child is not waited for: it outlives this process, and init reaps it.
    let _ = cmd.spawn()?;
    Ok(())
}
