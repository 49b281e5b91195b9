//! Packaging: completions and man page from the clap definitions, the .pkg postinstall run on
//! Linux against fakes of the macOS tools it calls, and shellcheck over the shell we ship.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::TestContext;

#[test]
fn completions_and_man_page_come_from_the_cli_and_are_hidden() {
    let t = TestContext::new();
    for (shell, marker) in [
        ("bash", "_oyster()"),
        ("zsh", "#compdef oyster"),
        ("fish", "complete -c oyster"),
    ] {
        let out = t.run(["completions", shell]).ok().stdout();
        assert!(
            out.contains(marker),
            "{shell}: {}",
            &out[..out.len().min(200)]
        );
        assert!(out.contains("regenerate"), "{shell} completes subcommands");
    }
    let man = t.run(["man"]).ok().stdout();
    assert!(
        man.contains(".TH oyster 1") && man.contains("setup"),
        "{}",
        &man[..200]
    );
    let help = t.run(["--help"]).ok().stdout();
    assert!(
        !help.contains("completions") && !help.contains("\n  man "),
        "{help}"
    );
    t.run(["completions", "tcsh"]).fails_with(2);
}

fn postinstall() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/pkg/scripts/postinstall")
}

struct Pkg {
    t: TestContext,
    fakes: PathBuf,
    dest: PathBuf,
    user_home: PathBuf,
    log: PathBuf,
}

fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

impl Pkg {
    fn new(oyster_exit: i32) -> Pkg {
        let t = TestContext::new();
        let fakes = t.path("fakes");
        let dest = t.path("dest");
        let user_home = t.path("Users/alice");
        let log = t.path("calls.log");
        let l = log.display();
        script(&fakes.join("stat"), &format!("echo \"stat $*\" >> '{l}'\n[ -n \"${{FAKE_CONSOLE+x}}\" ] || exit 1\necho \"$FAKE_CONSOLE\""));
        script(
            &fakes.join("id"),
            &format!("echo \"id $*\" >> '{l}'\necho 501"),
        );
        script(
            &fakes.join("dscl"),
            &format!(
                "echo \"dscl $*\" >> '{l}'\necho \"NFSHomeDirectory: {}\"",
                user_home.display()
            ),
        );
        script(&fakes.join("launchctl"), &format!("echo \"launchctl $* as=${{RUN_AS:-root}}\" >> '{l}'\n[ \"$1\" = asuser ] || exit 64\nshift 2\nexec \"$@\""));
        script(&fakes.join("sudo"), &format!("echo \"sudo $* as=${{RUN_AS:-root}}\" >> '{l}'\n[ \"$1\" = -u ] && [ \"$3\" = -H ] || exit 1\nRUN_AS=\"$2\"; HOME='{}'; export RUN_AS HOME\nshift 3\nexec \"$@\"", user_home.display()));
        script(
            &dest.join("usr/local/bin/oyster"),
            &format!(
                "echo \"oyster $* as=${{RUN_AS:-root}} home=$HOME\" >> '{l}'\nexit {oyster_exit}"
            ),
        );
        std::fs::create_dir_all(&user_home).unwrap();
        Pkg {
            t,
            fakes,
            dest,
            user_home,
            log,
        }
    }

    fn run(&self, console: Option<&str>, target: &str) -> (i32, String, Vec<String>) {
        let mut c = Command::new("/bin/sh");
        c.arg(postinstall())
            .arg("/tmp/oyster.pkg")
            .arg(&self.dest)
            .arg(target);
        c.env_clear()
            .env("PATH", &self.fakes)
            .env("HOME", "/var/root");
        if let Some(user) = console {
            c.env("FAKE_CONSOLE", user);
        }
        let out = c.output().unwrap();
        let calls = std::fs::read_to_string(&self.log)
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap(), text, calls)
    }
}

#[test]
fn postinstall_installs_as_the_console_user_in_their_gui_session() {
    let p = Pkg::new(0);
    let oyster = p.dest.join("usr/local/bin/oyster");
    let o = oyster.display();
    let (code, out, calls) = p.run(Some("alice"), "/");
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        calls,
        [
            "stat -f%Su /dev/console".to_string(),
            "id -u alice".to_string(),
            "dscl . -read /Users/alice NFSHomeDirectory".to_string(),
            format!("launchctl asuser 501 sudo -u alice -H {o} agent install as=root"),
            format!("sudo -u alice -H {o} agent install as=root"),
            format!(
                "oyster agent install as=alice home={}",
                p.user_home.display()
            ),
        ]
    );
    assert!(out.contains("as alice (uid 501) in gui/501"), "{out}");

    // An existing LaunchAgent is regenerated instead.
    let agents = p.user_home.join("Library/LaunchAgents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("com.oysterun.host.plist"), "x").unwrap();
    let (code, _, calls) = p.run(Some("alice"), "/");
    assert_eq!(code, 0);
    assert_eq!(
        calls.last().unwrap(),
        &format!(
            "oyster agent regenerate as=alice home={}",
            p.user_home.display()
        )
    );
    assert!(
        !calls
            .iter()
            .any(|c| c.starts_with("oyster") && c.contains("as=root")),
        "oyster never runs as root"
    );
    let _ = &p.t;
}

#[test]
fn postinstall_with_nobody_logged_in_does_nothing_and_says_why() {
    let p = Pkg::new(0);
    for console in [
        Some("root"),
        Some("loginwindow"),
        Some("_mbsetupuser"),
        Some(""),
        None,
    ] {
        let (code, out, calls) = p.run(console, "/");
        assert_eq!(code, 0, "{console:?}: {out}");
        assert!(out.contains("nobody is logged in"), "{console:?}: {out}");
        assert_eq!(calls, ["stat -f%Su /dev/console"], "{console:?}");
    }
}

#[test]
fn postinstall_on_another_volume_touches_nothing() {
    let p = Pkg::new(0);
    let (code, out, calls) = p.run(Some("alice"), "/Volumes/Backup");
    assert_eq!(code, 0);
    assert!(out.contains("/Volumes/Backup"), "{out}");
    assert!(calls.is_empty(), "{calls:?}");
}

#[test]
fn postinstall_reports_a_failing_agent_step() {
    let p = Pkg::new(3);
    let (code, out, calls) = p.run(Some("alice"), "/");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAILED") && out.contains("exited 3") && out.contains("oyster doctor"),
        "{out}"
    );
    assert!(calls
        .last()
        .unwrap()
        .starts_with("oyster agent install as=alice"));
}

#[test]
fn build_pkg_refuses_off_macos() {
    if cfg!(target_os = "macos") {
        eprintln!("skipped: build-pkg.sh really builds on macOS");
        return;
    }
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/pkg/build-pkg.sh"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs macOS"));
}

#[test]
fn shipped_shell_is_shellcheck_clean() {
    let Ok(version) = Command::new("shellcheck").arg("--version").output() else {
        eprintln!("skipped: shellcheck is not installed (.ci/run installs it when it can)");
        return;
    };
    assert!(version.status.success());
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, shell) in [
        ("packaging/pkg/scripts/postinstall", "sh"),
        ("packaging/pkg/build-pkg.sh", "bash"),
        ("scripts/demo.sh", "bash"),
        ("scripts/apple-toolchain.sh", "bash"),
        ("scripts/check-macos.sh", "bash"),
        (".ci/run", "bash"),
    ] {
        let out = Command::new("shellcheck")
            .args(["-s", shell])
            .arg(top.join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
