//! The `.pkg`'s scripts (postinstall, oyster-uninstall, oyster-login) run on Linux against
//! recording fakes of the macOS tools they call.
//!
//! The scripts call every macOS tool by absolute path under $OYSTER_PKG_SYSROOT (empty in a real
//! install); here that is a temp dir holding recording fakes. Each fake appends one line to
//! calls.log: the tool, its arguments (quoted when they hold a space, so a split argument shows),
//! and `as=<user>` (root until the fake sudo switches). The fake oyster adds `home=$HOME`.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::repo::{repo, VERSION};
use super::{python, TestContext};

/// A macOS account the fakes know: local accounts are in both `.` and `/Search`, network
/// accounts only in `/Search`.
pub struct Account {
    pub name: &'static str,
    pub uid: u32,
    pub home: PathBuf,
    pub network: bool,
}

pub struct Pkg {
    pub t: TestContext,
    pub sys: PathBuf,
    pub dest: PathBuf,
    pub log: PathBuf,
    pub accounts: Vec<Account>,
}

pub struct Outcome {
    pub code: i32,
    pub out: String,
    pub calls: Vec<String>,
}

impl Outcome {
    pub fn oyster_calls(&self) -> Vec<&str> {
        self.calls.iter().filter(|c| c.starts_with("oyster ")).map(String::as_str).collect()
    }

    #[track_caller]
    pub fn exits_0_saying(&self, words: &[&str]) {
        assert_eq!(self.code, 0, "{}", self.out);
        for w in words {
            assert!(self.out.contains(w), "missing {w:?} in:\n{}", self.out);
        }
    }
}

/// One argument as the fakes log it.
pub fn word(arg: &str) -> String {
    if arg.contains(' ') {
        format!("'{arg}'")
    } else {
        arg.to_owned()
    }
}

pub fn w(p: &Path) -> String {
    word(&p.display().to_string())
}

pub fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A Python string literal.
pub fn py_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

pub fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl Pkg {
    pub fn new() -> Pkg {
        let t = TestContext::new();
        let sys = t.path("sys");
        let dest = t.path("dest");
        let log = t.path("calls.log");
        let accounts = vec![
            Account { name: "alice", uid: 501, home: t.path("Users/alice"), network: false },
            Account { name: "asmith", uid: 502, home: t.path("Users/Alice Smith"), network: false },
            Account {
                name: "bob",
                uid: 1026,
                home: t.path("Network/Servers/fs/Users/bob"),
                network: true,
            },
        ];
        for a in &accounts {
            std::fs::create_dir_all(&a.home).unwrap();
        }
        let p = Pkg { t, sys, dest, log, accounts };
        p.write_fakes();
        p
    }

    /// The shell function every fake logs its call with.
    pub fn logger(&self) -> String {
        format!(
            "log() {{ line=\"$1\"; shift; for a in \"$@\"; do case \"$a\" in *\" \"*) line=\"$line '$a'\" ;; *) line=\"$line $a\" ;; esac; done; printf '%s\\n' \"$line as=${{RUN_AS:-root}}${{extra:-}}\" >> {}; }}\n",
            sh_quote(&self.log.display().to_string())
        )
    }

    pub fn write_fakes(&self) {
        let logger = self.logger();
        let mut uids = String::new();
        let mut homes = String::new();
        let mut dirs = String::new();
        let mut owners = String::new();
        for a in &self.accounts {
            let home = sh_quote(&a.home.display().to_string());
            uids += &format!("  {}) echo {} ;;\n", a.name, a.uid);
            homes += &format!("  {}) HOME={home} uid={} ;;\n", a.name, a.uid);
            owners += &format!("  {home} | {home}/*) u={} ;;\n", a.uid);
            let nodes = if a.network {
                format!("/Search:{}", a.name)
            } else {
                format!(".:{n} | /Search:{n}", n = a.name)
            };
            dirs += &format!(
                "  {nodes}) home={} ;;\n",
                sh_quote(&xml_text(&a.home.display().to_string()))
            );
        }
        let bin = self.sys.join("usr/bin");
        // stat: `-f%Su /dev/console` (who is at the console) and `-f %u PATH` (who owns PATH
        // itself, BSD stat's lstat). Run by root, a file's real owner is said (the tests chown
        // for real); run by another uid, a file that uid owns under an account's home is said
        // to be that account's, and one under the stand-in root root's, as they would be on a
        // Mac where the user made the one and the package installed the other.
        script(
            &bin.join("stat"),
            &format!(
                "{logger}log stat \"$@\"\n\
                 if [ \"$1\" = -f ] && [ \"$2\" = %u ]; then\n\
                 u=\"$(/usr/bin/stat -c %u -- \"$3\")\" || exit 1\n\
                 me=\"$(/usr/bin/id -u)\"\n\
                 if [ \"$me\" != 0 ] && [ \"$u\" = \"$me\" ]; then case \"$3\" in\n{owners}  \"$OYSTER_PKG_SYSROOT\"/*) u=0 ;;\n  esac; fi\n\
                 echo \"$u\"; exit 0\nfi\n\
                 [ -n \"${{FAKE_CONSOLE+x}}\" ] || {{ echo 'stat: /dev/console: No such file or directory' >&2; exit 1; }}\n\
                 echo \"$FAKE_CONSOLE\""
            ),
        );
        script(
            &bin.join("id"),
            &format!(
                "{logger}log id \"$@\"\n[ $# -eq 1 ] && {{ echo \"${{FAKE_EUID:-0}}\"; exit 0; }}\ncase \"$2\" in\n{uids}  *) echo \"id: $2: no such user\" >&2; exit 1 ;;\nesac"
            ),
        );
        script(
            &bin.join("dscl"),
            &format!(
                "{logger}log dscl \"$@\"\n\
                 [ \"$1\" = -plist ] && [ \"$3\" = -read ] && [ \"$5\" = NFSHomeDirectory ] || exit 64\n\
                 case \"$2:${{4#/Users/}}\" in\n{dirs}  *) echo '<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)' >&2; exit 56 ;;\nesac\n\
                 printf '%s\\n' '<?xml version=\"1.0\" encoding=\"UTF-8\"?>' \
                 '<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">' \
                 '<plist version=\"1.0\">' '<dict>' '\t<key>dsAttrTypeStandard:NFSHomeDirectory</key>' '\t<array>' \
                 \"\t\t<string>$home</string>\" '\t</array>' '</dict>' '</plist>'"
            ),
        );
        script(
            &self.sys.join("bin/launchctl"),
            &format!(
                "{logger}log launchctl \"$@\"\n\
                 if [ -n \"${{FAKE_LAUNCHCTL_EXIT:-}}\" ]; then echo 'Could not switch to audit session: 1: Operation not permitted' >&2; exit \"$FAKE_LAUNCHCTL_EXIT\"; fi\n\
                 [ \"$1\" = bootout ] && exit \"${{FAKE_BOOTOUT_EXIT:-0}}\"\n\
                 [ \"$1\" = asuser ] || exit 64\nshift 2\nexec \"$@\""
            ),
        );
        script(
            &bin.join("sudo"),
            &format!(
                "{logger}log sudo \"$@\"\n\
                 [ \"$1\" = -u ] && [ \"$3\" = -H ] || {{ echo 'fake sudo: expected -u NAME -H' >&2; exit 1; }}\n\
                 case \"$2\" in\n{homes}  *) echo \"sudo: unknown user $2\" >&2; exit 1 ;;\nesac\n\
                 RUN_AS=\"$2\"; export RUN_AS HOME\nshift 3\n\
                 [ -n \"${{FAKE_SUDO_REAL_UIDS:-}}\" ] && exec /usr/bin/setpriv --reuid=\"$uid\" --regid=\"$uid\" --clear-groups \"$@\"\n\
                 exec \"$@\""
            ),
        );
        // plutil: a faithful-enough `-extract KEYPATH raw -o - FILE|-` on Python's plistlib, so
        // the dscl output and the key paths are checked as real plists. It logs after reading
        // stdin, so its line always follows dscl's.
        let plutil = bin.join("plutil");
        std::fs::write(
            &plutil,
            format!(
                r#"#!{py}
import os, sys, plistlib
a = sys.argv[1:]
data = b""
if len(a) == 6 and a[5] == "-":
    data = sys.stdin.buffer.read()
with open({log}, "a") as f:
    words = ["'" + x + "'" if " " in x else x for x in a]
    f.write(" ".join(["plutil"] + words) + " as=" + os.environ.get("RUN_AS", "root") + "\n")
if os.environ.get("FAKE_PLUTIL_STOP") == os.environ.get("RUN_AS", "root"):
    # The user stops their own process: root must not wait for it.
    import signal
    os.kill(os.getpid(), signal.SIGSTOP)
if os.environ.get("FAKE_PLUTIL_NO_RAW"):
    sys.stderr.write("plutil: invalid format 'raw' (macOS 11)\n")
    sys.exit(1)
if len(a) != 6 or a[0] != "-extract" or a[2] != "raw" or a[3:5] != ["-o", "-"]:
    sys.stderr.write("fake plutil: unexpected arguments\n")
    sys.exit(64)
try:
    if a[5] != "-":
        data = open(a[5], "rb").read()
    v = plistlib.loads(data)
    for k in a[1].split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
    assert isinstance(v, str)
except Exception:
    sys.stderr.write("Could not extract value, error: No value at that key path or invalid key path: " + a[1] + "\n")
    sys.exit(1)
print(v)
"#,
                py = python(),
                log = py_str(&self.log.display().to_string()),
            ),
        )
        .unwrap();
        std::fs::set_permissions(&plutil, std::fs::Permissions::from_mode(0o755)).unwrap();
        // pkgutil: `--files ID` prints the receipt (sys/receipt.txt, paths relative to /),
        // `--forget ID` removes it; an unknown package is pkgutil's own error. With
        // FAKE_PKGUTIL_HOOK, `--files` first runs it (oyster-uninstall asks after its plan is
        // made and before it acts: a test changes a home there).
        let receipt = sh_quote(&self.sys.join("receipt.txt").display().to_string());
        script(
            &self.sys.join("usr/sbin/pkgutil"),
            &format!(
                "{logger}log pkgutil \"$@\"\n\
                 if [ \"$1\" = --files ] && [ -n \"${{FAKE_PKGUTIL_HOOK:-}}\" ]; then /bin/sh -c \"$FAKE_PKGUTIL_HOOK\"; fi\n\
                 [ \"$2\" = com.oysterun.oyster ] && [ -f {receipt} ] || {{ echo \"No receipt for '$2' found at '/'.\" >&2; exit 1; }}\n\
                 case \"$1\" in --files) cat {receipt} ;; --forget) rm -f {receipt}; echo \"Forgot package '$2' on '/'.\" ;; *) exit 64 ;; esac"
            ),
        );
        self.write_oyster("");
    }

    pub fn oyster(&self) -> PathBuf {
        self.dest.join("Library/Oysterun/bin/oyster")
    }

    /// The payload's oyster: a fake that records how it was run. `prefix` runs first.
    pub fn write_oyster(&self, prefix: &str) {
        let logger = self.logger();
        script(
            &self.oyster(),
            &format!(
                "{prefix}{logger}case \"$HOME\" in *\" \"*) extra=\" home='$HOME'\" ;; *) extra=\" home=$HOME\" ;; esac\nlog oyster \"$@\"\n\
                 case \"$1 ${{2:-}}\" in\n\
                 \"--version \") echo 'oyster {VERSION}' ;;\n\
                 \"agent print\") if [ -n \"${{FAKE_PRINT_ERROR:-}}\" ]; then echo \"oyster: $FAKE_PRINT_ERROR\" >&2; exit 2; fi; echo '<plist/>' ;;\n\
                 \"agent install\" | \"agent regenerate\") exit \"${{FAKE_OYSTER_EXIT:-0}}\" ;;\n\
                 *) exit 64 ;;\nesac"
            ),
        );
    }

    pub fn account(&self, name: &str) -> &Account {
        self.accounts.iter().find(|a| a.name == name).unwrap()
    }

    pub fn home(&self, name: &str) -> PathBuf {
        self.account(name).home.clone()
    }

    /// An executable stand-in for node.
    pub fn node_at(&self, path: &Path) -> PathBuf {
        script(path, "exit 0");
        path.to_owned()
    }

    pub fn brew_node(&self) -> PathBuf {
        self.node_at(&self.sys.join("opt/homebrew/bin/node"))
    }

    pub fn agents_dir(&self, user: &str) -> PathBuf {
        self.home(user).join("Library/LaunchAgents")
    }

    /// An installed production agent pinning `node`, in the XML format oyster writes.
    pub fn install_agent(&self, user: &str, node: &Path) -> PathBuf {
        let plist = self.agents_dir(user).join("com.oysterun.host.plist");
        std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
        let mut env = plist::Dictionary::new();
        env.insert("OYSTERUN_NODE_BIN".into(), node.display().to_string().into());
        env.insert("OYSTERUN_PORT".into(), "8802".into());
        let mut top = plist::Dictionary::new();
        top.insert("EnvironmentVariables".into(), env.into());
        top.insert("Label".into(), "com.oysterun.host".into());
        plist::Value::Dictionary(top).to_file_xml(&plist).unwrap();
        plist
    }

    pub fn run(&self, console: Option<&str>, env: &[(&str, &str)]) -> Outcome {
        self.run_on("/", console, env)
    }

    pub fn run_on(&self, target: &str, console: Option<&str>, env: &[(&str, &str)]) -> Outcome {
        self.sh(
            "packaging/pkg/scripts/postinstall",
            [OsStr::new("/tmp/oyster.pkg"), self.dest.as_os_str(), OsStr::new(target)],
            Path::new("/var/root"),
            console,
            env,
        )
    }

    /// Runs the package's script `rel` (from the repository) with `/bin/sh` as Installer or
    /// launchd runs it: nothing of the test's environment, a minimal PATH, HOME `home`, the
    /// stand-in root; `console` is who the fake stat says is at the console. Then the calls the
    /// fakes logged, and the log is emptied for the next run.
    pub fn sh<I, S>(
        &self,
        rel: &str,
        args: I,
        home: &Path,
        console: Option<&str>,
        env: &[(&str, &str)],
    ) -> Outcome
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new("/bin/sh");
        c.arg(repo().join(rel)).args(args);
        c.env_clear()
            .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", home)
            .env("OYSTER_PKG_SYSROOT", &self.sys)
            .stdin(std::process::Stdio::null());
        if let Some(user) = console {
            c.env("FAKE_CONSOLE", user);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        Outcome {
            code: out.status.code().unwrap_or(-1),
            out: String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
            calls: take_log(&self.log),
        }
    }

    /// The calls that find the console user and their home through /Search.
    pub fn lookup_calls(&self, user: &str) -> Vec<String> {
        vec![
            "oyster --version as=root home=/var/root".to_string(),
            "stat -f%Su /dev/console as=root".to_string(),
            format!("id -u {user} as=root"),
            format!("dscl -plist /Search -read /Users/{user} NFSHomeDirectory as=root"),
            "plutil -extract dsAttrTypeStandard:NFSHomeDirectory.0 raw -o - - as=root".to_string(),
        ]
    }

    /// print (as the user), then `verb` through launchctl asuser and sudo, with `node_args`.
    pub fn agent_calls(&self, user: &str, verb: &str, node_args: &str) -> Vec<String> {
        let uid = self.account(user).uid;
        let o = w(&self.oyster());
        let home = w(&self.home(user));
        let sudo = w(&self.sys.join("usr/bin/sudo"));
        vec![
            format!("sudo -u {user} -H {o} agent print{node_args} as=root"),
            format!("oyster agent print{node_args} as={user} home={home}"),
            format!(
                "launchctl asuser {uid} {sudo} -u {user} -H {o} agent {verb}{node_args} as=root"
            ),
            format!("sudo -u {user} -H {o} agent {verb}{node_args} as=root"),
            format!("oyster agent {verb}{node_args} as={user} home={home}"),
        ]
    }
}

#[track_caller]
pub fn assert_oyster_never_acts_as_root(o: &Outcome) {
    for c in o.oyster_calls() {
        assert!(
            !c.contains(" as=root") || c.starts_with("oyster --version "),
            "oyster ran a command as root: {c}\n{:#?}",
            o.calls
        );
    }
}

/// What the package installed, relative to / (as `pkgutil --files` lists it: directories too).
pub const PKG_FILES: &[&str] = &[
    "Library",
    "Library/Oysterun",
    "Library/Oysterun/bin",
    "Library/Oysterun/bin/oyster",
    "usr",
    "usr/local",
    "usr/local/bin",
    "usr/local/bin/oyster",
    "usr/local/bin/oyster-uninstall",
    "usr/local/share/man/man1/oyster.1",
    "usr/local/share/man/man1/oyster-agent.1",
    "usr/local/share/zsh/site-functions/_oyster",
    "usr/local/share/fish/vendor_completions.d/oyster.fish",
];

impl Pkg {
    /// The package's files under the stand-in root, and its receipt.
    pub fn install_payload(&self) {
        for rel in PKG_FILES {
            let p = self.sys.join(rel);
            if rel.contains('.') || rel.ends_with("oyster") || rel.ends_with("uninstall") {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, "payload").unwrap();
            } else {
                std::fs::create_dir_all(&p).unwrap();
            }
        }
        std::fs::write(self.sys.join("receipt.txt"), PKG_FILES.join("\n") + "\n").unwrap();
    }

    /// A LaunchAgent for `label` whose program is `program`.
    pub fn agent_running(&self, user: &str, label: &str, program: &str) -> PathBuf {
        let plist = self.agents_dir(user).join(format!("{label}.plist"));
        std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
        let mut top = plist::Dictionary::new();
        top.insert("Label".into(), label.into());
        top.insert(
            "ProgramArguments".into(),
            plist::Value::Array(vec![program.into(), "host".into(), "exec".into()]),
        );
        plist::Value::Dictionary(top).to_file_xml(&plist).unwrap();
        self.owned_by(user, &plist);
        self.owned_by(user, plist.parent().unwrap());
        plist
    }

    /// `path` (itself, not a link's target) belongs to `user`'s uid, as what a user makes in
    /// their home does on a Mac; when the tests do not run as root, the fake `stat` says so.
    pub fn owned_by(&self, user: &str, path: &Path) {
        if nix::unistd::geteuid().is_root() {
            let id = self.account(user).uid;
            nix::unistd::fchownat(
                nix::fcntl::AT_FDCWD,
                path,
                Some(nix::unistd::Uid::from_raw(id)),
                Some(nix::unistd::Gid::from_raw(id)),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap();
        }
    }

    /// `sudo oyster-uninstall --yes`: without a terminal it removes nothing unless told to
    /// (tests/it/fleet_pkg.rs).
    pub fn uninstall(&self, console: Option<&str>, env: &[(&str, &str)]) -> Outcome {
        self.uninstall_with(&["--yes"], console, env)
    }

    /// `sudo oyster-uninstall ARGS`, with no terminal.
    pub fn uninstall_with(
        &self,
        args: &[&str],
        console: Option<&str>,
        env: &[(&str, &str)],
    ) -> Outcome {
        let root_home = Path::new("/var/root");
        self.sh("packaging/pkg/oyster-uninstall", args, root_home, console, env)
    }

    /// packaging/pkg/oyster-login as launchd runs it at `user`'s login: their HOME, a minimal
    /// PATH.
    pub fn login(&self, user: &str, env: &[(&str, &str)]) -> Outcome {
        let mut all = vec![("RUN_AS", user)];
        all.extend_from_slice(env);
        let no_args: [&str; 0] = [];
        self.sh("packaging/pkg/oyster-login", no_args, &self.home(user), None, &all)
    }
}

/// The lines a recording fake appended to `log`, which is then removed (the next run starts
/// from nothing).
pub fn take_log(log: &Path) -> Vec<String> {
    let calls = std::fs::read_to_string(log)
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default();
    let _ = std::fs::remove_file(log);
    calls
}
