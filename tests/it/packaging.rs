//! Packaging: completions and man page from the clap definitions; the .pkg postinstall and
//! build-pkg.sh run on Linux against recording fakes of the macOS tools they call; the release
//! archive `make dist` makes; the Homebrew formula (syntax, stanzas, and its `test do` run
//! against the real binary); shellcheck over the shell we ship.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{self, TestContext};

pub(crate) fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

#[test]
fn completions_and_man_page_come_from_the_cli_and_are_listed_in_help() {
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
    // Listed in --help (what a user looking for completions reads first).
    let help = t.run(["--help"]).ok().stdout();
    assert!(
        help.contains("\n  completions ") && help.contains("\n  man "),
        "{help}"
    );
    assert!(help.contains("Examples:\n  oyster setup"), "{help}");
    t.run(["completions", "tcsh"]).fails_with(2);
}

// ---------------------------------------------------------------------------------------------
// The .pkg postinstall.
//
// The script calls every macOS tool by absolute path under $OYSTER_PKG_SYSROOT (empty in a real
// install); here that is a temp dir holding recording fakes. Each fake appends one line to
// calls.log: the tool, its arguments (quoted when they hold a space, so a split argument shows),
// and `as=<user>` (root until the fake sudo switches). The fake oyster adds `home=$HOME`.

/// A macOS account the fakes know: local accounts are in both `.` and `/Search`, network
/// accounts only in `/Search`.
pub(crate) struct Account {
    pub(crate) name: &'static str,
    pub(crate) uid: u32,
    pub(crate) home: PathBuf,
    pub(crate) network: bool,
}

pub(crate) struct Pkg {
    pub(crate) t: TestContext,
    pub(crate) sys: PathBuf,
    pub(crate) dest: PathBuf,
    pub(crate) log: PathBuf,
    pub(crate) accounts: Vec<Account>,
}

pub(crate) struct Outcome {
    pub(crate) code: i32,
    pub(crate) out: String,
    pub(crate) calls: Vec<String>,
}

impl Outcome {
    pub(crate) fn oyster_calls(&self) -> Vec<&str> {
        self.calls
            .iter()
            .filter(|c| c.starts_with("oyster "))
            .map(String::as_str)
            .collect()
    }

    #[track_caller]
    pub(crate) fn exits_0_saying(&self, words: &[&str]) {
        assert_eq!(self.code, 0, "{}", self.out);
        for w in words {
            assert!(self.out.contains(w), "missing {w:?} in:\n{}", self.out);
        }
    }
}

/// One argument as the fakes log it.
pub(crate) fn word(arg: &str) -> String {
    if arg.contains(' ') {
        format!("'{arg}'")
    } else {
        arg.to_owned()
    }
}

pub(crate) fn w(p: &Path) -> String {
    word(&p.display().to_string())
}

pub(crate) fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The real Python interpreter (not a pyenv shim, which needs the runner's environment).
pub(crate) fn python() -> &'static str {
    static PY: OnceLock<String> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("the tests need python3");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A Python string literal.
pub(crate) fn py_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

pub(crate) fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Pkg {
    pub(crate) fn new() -> Pkg {
        let t = TestContext::new();
        let sys = t.path("sys");
        let dest = t.path("dest");
        let log = t.path("calls.log");
        let accounts = vec![
            Account {
                name: "alice",
                uid: 501,
                home: t.path("Users/alice"),
                network: false,
            },
            Account {
                name: "asmith",
                uid: 502,
                home: t.path("Users/Alice Smith"),
                network: false,
            },
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
        let p = Pkg {
            t,
            sys,
            dest,
            log,
            accounts,
        };
        p.write_fakes();
        p
    }

    /// The shell function every fake logs its call with.
    pub(crate) fn logger(&self) -> String {
        format!(
            "log() {{ line=\"$1\"; shift; for a in \"$@\"; do case \"$a\" in *\" \"*) line=\"$line '$a'\" ;; *) line=\"$line $a\" ;; esac; done; printf '%s\\n' \"$line as=${{RUN_AS:-root}}${{extra:-}}\" >> {}; }}\n",
            sh_quote(&self.log.display().to_string())
        )
    }

    pub(crate) fn write_fakes(&self) {
        let logger = self.logger();
        let mut uids = String::new();
        let mut homes = String::new();
        let mut dirs = String::new();
        for a in &self.accounts {
            let home = sh_quote(&a.home.display().to_string());
            uids += &format!("  {}) echo {} ;;\n", a.name, a.uid);
            homes += &format!("  {}) HOME={home} ;;\n", a.name);
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
        script(
            &bin.join("stat"),
            &format!(
                "{logger}log stat \"$@\"\n\
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
                 RUN_AS=\"$2\"; export RUN_AS HOME\nshift 3\nexec \"$@\""
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
        // `--forget ID` removes it; an unknown package is pkgutil's own error.
        let receipt = sh_quote(&self.sys.join("receipt.txt").display().to_string());
        script(
            &self.sys.join("usr/sbin/pkgutil"),
            &format!(
                "{logger}log pkgutil \"$@\"\n\
                 [ \"$2\" = com.oysterun.oyster ] && [ -f {receipt} ] || {{ echo \"No receipt for '$2' found at '/'.\" >&2; exit 1; }}\n\
                 case \"$1\" in --files) cat {receipt} ;; --forget) rm -f {receipt}; echo \"Forgot package '$2' on '/'.\" ;; *) exit 64 ;; esac"
            ),
        );
        self.write_oyster("");
    }

    pub(crate) fn oyster(&self) -> PathBuf {
        self.dest.join("usr/local/bin/oyster")
    }

    /// The payload's oyster: a fake that records how it was run. `prefix` runs first.
    pub(crate) fn write_oyster(&self, prefix: &str) {
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

    pub(crate) fn account(&self, name: &str) -> &Account {
        self.accounts.iter().find(|a| a.name == name).unwrap()
    }

    pub(crate) fn home(&self, name: &str) -> PathBuf {
        self.account(name).home.clone()
    }

    /// An executable stand-in for node.
    pub(crate) fn node_at(&self, path: &Path) -> PathBuf {
        script(path, "exit 0");
        path.to_owned()
    }

    pub(crate) fn brew_node(&self) -> PathBuf {
        self.node_at(&self.sys.join("opt/homebrew/bin/node"))
    }

    pub(crate) fn agents_dir(&self, user: &str) -> PathBuf {
        self.home(user).join("Library/LaunchAgents")
    }

    /// An installed production agent pinning `node`, in the XML format oyster writes.
    pub(crate) fn install_agent(&self, user: &str, node: &Path) -> PathBuf {
        let plist = self.agents_dir(user).join("com.oysterun.host.plist");
        std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
        let mut env = plist::Dictionary::new();
        env.insert(
            "OYSTERUN_NODE_BIN".into(),
            node.display().to_string().into(),
        );
        env.insert("OYSTERUN_PORT".into(), "8802".into());
        let mut top = plist::Dictionary::new();
        top.insert("EnvironmentVariables".into(), env.into());
        top.insert("Label".into(), "com.oysterun.host".into());
        plist::Value::Dictionary(top).to_file_xml(&plist).unwrap();
        plist
    }

    pub(crate) fn run(&self, console: Option<&str>, env: &[(&str, &str)]) -> Outcome {
        self.run_on("/", console, env)
    }

    pub(crate) fn run_on(
        &self,
        target: &str,
        console: Option<&str>,
        env: &[(&str, &str)],
    ) -> Outcome {
        let mut c = Command::new("/bin/sh");
        c.arg(repo().join("packaging/pkg/scripts/postinstall"))
            .arg("/tmp/oyster.pkg")
            .arg(&self.dest)
            .arg(target);
        // What Installer gives a postinstall: root's HOME and a minimal PATH.
        c.env_clear()
            .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", "/var/root")
            .env("OYSTER_PKG_SYSROOT", &self.sys);
        if let Some(user) = console {
            c.env("FAKE_CONSOLE", user);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let calls = std::fs::read_to_string(&self.log)
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        let out_text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        Outcome {
            code: out.status.code().unwrap_or(-1),
            out: out_text,
            calls,
        }
    }

    /// The calls that find the console user and their home through /Search.
    pub(crate) fn lookup_calls(&self, user: &str) -> Vec<String> {
        vec![
            "oyster --version as=root home=/var/root".to_string(),
            "stat -f%Su /dev/console as=root".to_string(),
            format!("id -u {user} as=root"),
            format!("dscl -plist /Search -read /Users/{user} NFSHomeDirectory as=root"),
            "plutil -extract dsAttrTypeStandard:NFSHomeDirectory.0 raw -o - - as=root".to_string(),
        ]
    }

    /// print (as the user), then `verb` through launchctl asuser and sudo, with `node_args`.
    pub(crate) fn agent_calls(&self, user: &str, verb: &str, node_args: &str) -> Vec<String> {
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
pub(crate) fn assert_oyster_never_acts_as_root(o: &Outcome) {
    for c in o.oyster_calls() {
        assert!(
            !c.contains(" as=root") || c.starts_with("oyster --version "),
            "oyster ran a command as root: {c}\n{:#?}",
            o.calls
        );
    }
}

#[test]
fn postinstall_installs_as_the_console_user_in_their_gui_session() {
    let p = Pkg::new();
    let node = p.brew_node();
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&[
        &format!("installed oyster {VERSION}"),
        "as alice (uid 501) in gui/501",
        "done: oyster agent install",
    ]);
    let mut want = p.lookup_calls("alice");
    want.extend(p.agent_calls("alice", "install", &format!(" --node-bin {}", w(&node))));
    assert_eq!(o.calls, want);
    assert_oyster_never_acts_as_root(&o);
}

#[test]
fn postinstall_upgrade_regenerates_with_the_pinned_node() {
    let p = Pkg::new();
    let brew = p.brew_node();
    // nvm's Node is not on Installer's PATH: only the installed agent knows it.
    let pinned = p.node_at(&p.home("alice").join(".nvm/versions/node/v22.11.0/bin/node"));
    let plist = p.install_agent("alice", &pinned);
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&["done: oyster agent regenerate"]);
    let mut want = p.lookup_calls("alice");
    want.push(format!(
        "plutil -extract EnvironmentVariables.OYSTERUN_NODE_BIN raw -o - {} as=root",
        w(&plist)
    ));
    want.extend(p.agent_calls(
        "alice",
        "regenerate",
        &format!(" --node-bin {}", w(&pinned)),
    ));
    assert_eq!(o.calls, want);
    assert_oyster_never_acts_as_root(&o);

    // Another stack's agent is named, with the command for it, but left to its owner.
    std::fs::write(
        p.agents_dir("alice")
            .join("com.oysterun.host.staging.plist"),
        "x",
    )
    .unwrap();
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&[
        "also has the stack 'staging'",
        "oyster agent regenerate --stack staging",
    ]);
    assert!(
        !o.oyster_calls().iter().any(|c| c.contains("--stack")),
        "{:#?}",
        o.calls
    );

    // A pin whose Node was removed is passed over for the common locations, aloud.
    std::fs::remove_file(&pinned).unwrap();
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&["is gone"]);
    assert_eq!(
        o.oyster_calls().last().unwrap(),
        &format!(
            "oyster agent regenerate --node-bin {} as=alice home={}",
            w(&brew),
            w(&p.home("alice"))
        )
    );

    // No Node anywhere on an upgrade: oyster decides (it reads the installed pin itself).
    std::fs::remove_file(&brew).unwrap();
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&["done: oyster agent regenerate"]);
    assert_eq!(
        o.oyster_calls().last().unwrap(),
        &format!(
            "oyster agent regenerate as=alice home={}",
            w(&p.home("alice"))
        )
    );
}

#[test]
fn postinstall_finds_a_home_with_spaces() {
    let p = Pkg::new();
    let home = p.home("asmith");
    assert!(home.display().to_string().contains("Alice Smith"));
    let pinned = p.node_at(&home.join(".nvm/versions/node/v22.11.0/bin/node"));
    p.install_agent("asmith", &pinned);
    let o = p.run(Some("asmith"), &[]);
    // The plist was found under the whole home (so: regenerate), and the pin under it reached
    // oyster as one argument.
    o.exits_0_saying(&[
        "done: oyster agent regenerate",
        &format!("(home {})", home.display()),
    ]);
    assert_eq!(
        o.oyster_calls()[1..],
        [
            format!(
                "oyster agent print --node-bin {} as=asmith home={}",
                w(&pinned),
                w(&home)
            ),
            format!(
                "oyster agent regenerate --node-bin {} as=asmith home={}",
                w(&pinned),
                w(&home)
            ),
        ]
    );
}

#[test]
fn postinstall_finds_a_network_account_through_search() {
    let p = Pkg::new();
    let node = p.brew_node();
    // The local node does not know bob: `dscl .` would have missed him.
    let local = Command::new(p.sys.join("usr/bin/dscl"))
        .args(["-plist", ".", "-read", "/Users/bob", "NFSHomeDirectory"])
        .env("RUN_AS", "check")
        .output()
        .unwrap();
    assert!(!local.status.success());
    let _ = std::fs::remove_file(&p.log);

    let o = p.run(Some("bob"), &[]);
    o.exits_0_saying(&["as bob (uid 1026) in gui/1026"]);
    let mut want = p.lookup_calls("bob");
    want.extend(p.agent_calls("bob", "install", &format!(" --node-bin {}", w(&node))));
    assert_eq!(o.calls, want);
}

#[test]
fn postinstall_without_plutil_raw_asks_the_user_for_the_home() {
    // macOS 11's plutil has no `raw`: the home comes from sudo -H, as the user, and the
    // installed agent is still found under it (a home with spaces, too).
    let p = Pkg::new();
    let home = p.home("asmith");
    let pinned = p.node_at(&home.join("node/bin/node"));
    p.install_agent("asmith", &pinned);
    let o = p.run(Some("asmith"), &[("FAKE_PLUTIL_NO_RAW", "1")]);
    o.exits_0_saying(&["done: oyster agent regenerate"]);
    assert!(
        o.calls.contains(
            &r#"sudo -u asmith -H /bin/sh -c 'printf "%s\n" "$HOME"' as=root"#.to_string()
        ),
        "{:#?}",
        o.calls
    );
    // The pin could not be read either, so oyster reads it itself.
    assert_eq!(
        o.oyster_calls().last().unwrap(),
        &format!("oyster agent regenerate as=asmith home={}", w(&home))
    );
}

#[test]
fn postinstall_without_an_oysterun_root_leaves_setup_to_the_user() {
    let p = Pkg::new();
    p.brew_node();
    let err = "could not find the Oysterun install root; pass --root DIR or set OYSTERUN_ROOT";
    let o = p.run(Some("alice"), &[("FAKE_PRINT_ERROR", err)]);
    o.exits_0_saying(&[
        &format!("oyster cannot set up the agent for alice yet: oyster: {err}"),
        "run as alice (in Terminal, without sudo): oyster setup --root <your Oysterun install>",
        "oyster doctor",
    ]);
    assert!(
        !o.calls.iter().any(|c| c.starts_with("launchctl")),
        "{:#?}",
        o.calls
    );
    assert!(o
        .oyster_calls()
        .last()
        .unwrap()
        .starts_with("oyster agent print "));

    // On an upgrade, the hint is the regenerate the user can run once the root is back.
    let pinned = p.brew_node();
    p.install_agent("alice", &pinned);
    let o = p.run(Some("alice"), &[("FAKE_PRINT_ERROR", err)]);
    o.exits_0_saying(&[
        &format!("oyster cannot set up the agent for alice yet: oyster: {err}"),
        "run as alice (in Terminal, without sudo): oyster agent regenerate --root <your Oysterun install>",
    ]);
    assert!(
        !o.calls.iter().any(|c| c.starts_with("launchctl")),
        "{:#?}",
        o.calls
    );
}

#[test]
fn postinstall_without_a_usable_node_leaves_setup_to_the_user() {
    let p = Pkg::new();
    // Not executable does not count.
    let brew = p.sys.join("opt/homebrew/bin/node");
    std::fs::create_dir_all(brew.parent().unwrap()).unwrap();
    std::fs::write(&brew, "").unwrap();
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&[
        "no usable Node for alice",
        "run as alice (in Terminal, without sudo): oyster setup --root <your Oysterun install> --node-bin <your node",
    ]);
    assert_eq!(
        o.oyster_calls(),
        ["oyster --version as=root home=/var/root"]
    );
    assert!(!o
        .calls
        .iter()
        .any(|c| c.starts_with("sudo") || c.starts_with("launchctl")));

    // Intel Homebrew and the nodejs.org installer put Node in /usr/local/bin.
    let intel = p.node_at(&p.sys.join("usr/local/bin/node"));
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&["done: oyster agent install"]);
    assert!(o.oyster_calls().last().unwrap().starts_with(&format!(
        "oyster agent install --node-bin {} as=alice",
        w(&intel)
    )));
}

#[test]
fn postinstall_with_nobody_logged_in_does_nothing_and_says_why() {
    let p = Pkg::new();
    for console in [
        Some("root"),
        Some("loginwindow"),
        Some("_mbsetupuser"),
        Some(""),
        None,
    ] {
        let o = p.run(console, &[]);
        o.exits_0_saying(&[
            "nobody is logged in",
            "'oyster agent regenerate' after an upgrade",
            "'oyster setup --root <your Oysterun install>' the first time",
        ]);
        assert_eq!(
            o.calls,
            [
                "oyster --version as=root home=/var/root",
                "stat -f%Su /dev/console as=root"
            ],
            "{console:?}"
        );
    }
}

#[test]
fn postinstall_when_launchctl_refuses_exits_0_with_the_command_to_run() {
    let p = Pkg::new();
    let home = p.home("asmith");
    let pinned = p.node_at(&home.join(".nvm/versions/node/v22.11.0/bin/node"));
    p.install_agent("asmith", &pinned);
    let o = p.run(Some("asmith"), &[("FAKE_LAUNCHCTL_EXIT", "5")]);
    // The command to paste quotes the path with a space.
    o.exits_0_saying(&[
        "Operation not permitted",
        "did not succeed (exit 5",
        &format!(
            "run as asmith (in Terminal, without sudo): oyster agent regenerate --node-bin '{}'",
            pinned.display()
        ),
    ]);
    assert!(o.calls.last().unwrap().starts_with("launchctl asuser 502 "));
    assert!(!o
        .oyster_calls()
        .iter()
        .any(|c| c.contains("agent regenerate")));
}

#[test]
fn postinstall_when_oyster_agent_install_fails_exits_0_with_the_command_to_run() {
    let p = Pkg::new();
    let node = p.brew_node();
    let o = p.run(Some("alice"), &[("FAKE_OYSTER_EXIT", "1")]);
    o.exits_0_saying(&[
        "did not succeed (exit 1",
        &format!(
            "run as alice (in Terminal, without sudo): oyster agent install --node-bin {}",
            node.display()
        ),
        "then check with: oyster doctor",
    ]);
    assert!(o
        .calls
        .last()
        .unwrap()
        .starts_with("oyster agent install --node-bin "));
}

#[test]
fn postinstall_on_another_volume_touches_nothing() {
    let p = Pkg::new();
    let o = p.run_on("/Volumes/Backup", Some("alice"), &[]);
    o.exits_0_saying(&["/Volumes/Backup"]);
    assert!(o.calls.is_empty(), "{:#?}", o.calls);
}

#[test]
fn postinstall_with_a_broken_payload_fails_the_install() {
    let p = Pkg::new();
    p.brew_node();
    // Not executable.
    std::fs::set_permissions(p.oyster(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = p.run(Some("alice"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(
        o.out.contains("BROKEN PAYLOAD") && o.out.contains("not executable"),
        "{}",
        o.out
    );
    assert!(o.calls.is_empty(), "{:#?}", o.calls);
    // Does not run (a wrong architecture, a truncated file).
    p.write_oyster("echo 'Bad CPU type in executable' >&2; exit 126\n");
    let o = p.run(Some("alice"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(
        o.out.contains("BROKEN PAYLOAD") && o.out.contains("Bad CPU type"),
        "{}",
        o.out
    );
    // Missing.
    std::fs::remove_file(p.oyster()).unwrap();
    let o = p.run(Some("alice"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains("BROKEN PAYLOAD"), "{}", o.out);
    assert!(o.calls.is_empty(), "{:#?}", o.calls);
    let _ = &p.t;
}

// ---------------------------------------------------------------------------------------------
// build-pkg.sh, against fakes of uname/cargo/lipo/codesign/pkgbuild/productbuild/xcrun.

#[test]
#[cfg_attr(
    target_os = "macos",
    ignore = "needs a machine that is not macOS: there build-pkg.sh really builds"
)]
fn build_pkg_refuses_off_macos() {
    let out = Command::new("bash")
        .arg(repo().join("packaging/pkg/build-pkg.sh"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs macOS"));
}

struct BuildPkg {
    t: TestContext,
    fakes: PathBuf,
    log: PathBuf,
}

impl BuildPkg {
    pub(crate) fn new() -> BuildPkg {
        let t = TestContext::new();
        let fakes = t.path("fakes");
        let log = t.path("calls.log");
        let l = sh_quote(&log.display().to_string());
        let rec = format!("echo \"$(basename \"$0\") $*\" >> {l}\n");
        script(&fakes.join("uname"), "echo Darwin");
        // cargo: a "binary" per target that answers `man` and `completions SHELL`.
        script(
            &fakes.join("cargo"),
            &format!(
                "{rec}while [ $# -gt 0 ]; do [ \"$1\" = --target ] && t=\"$2\"; shift; done\n\
                 mkdir -p \"$CARGO_TARGET_DIR/$t/release\"\n\
                 printf '#!/bin/sh\\nif [ \"$1 $2\" = \"man --dir\" ]; then mkdir -p \"$3\"; echo \"$1 for %s\" > \"$3/oyster.1\"; echo \"$1 for %s\" > \"$3/oyster-agent.1\"; exit; fi\\necho \"$1 $2 for %s\"\\n' \"$t\" \"$t\" \"$t\" > \"$CARGO_TARGET_DIR/$t/release/oyster\"\n\
                 chmod 755 \"$CARGO_TARGET_DIR/$t/release/oyster\""
            ),
        );
        script(
            &fakes.join("lipo"),
            &format!("{rec}if [ \"$1\" = -create ]; then cp \"$4\" \"$3\"; fi"),
        );
        script(&fakes.join("codesign"), &rec);
        script(&fakes.join("xcrun"), &rec);
        // pkgbuild records the payload; productbuild keeps the distribution it was given.
        script(
            &fakes.join("pkgbuild"),
            &format!(
                "{rec}(cd \"$2\" && find . -type f -perm -u+x -exec echo 'x {{}}' ';' && find . -type f ! -perm -u+x -exec echo '- {{}}' ';') | sort > {}\n\
                 for a in \"$@\"; do last=\"$a\"; done; : > \"$last\"",
                sh_quote(&t.path("payload.txt").display().to_string())
            ),
        );
        script(
            &fakes.join("productbuild"),
            &format!(
                "{rec}cp \"$2\" {}\nfor a in \"$@\"; do last=\"$a\"; done; : > \"$last\"",
                sh_quote(&t.path("distribution.xml").display().to_string())
            ),
        );
        BuildPkg { t, fakes, log }
    }

    pub(crate) fn run(&self, env: &[(&str, &str)]) -> (i32, String, Vec<String>) {
        let mut c = Command::new("bash");
        c.arg(repo().join("packaging/pkg/build-pkg.sh"))
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", self.fakes.display()))
            .env("HOME", &self.t.home)
            .env("CARGO_TARGET_DIR", self.t.path("target"))
            .env("DIST_DIR", self.t.path("dist"));
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let calls = std::fs::read_to_string(&self.log)
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text, calls)
    }
}

#[test]
fn build_pkg_makes_one_universal_package_and_signs_it_when_asked() {
    let b = BuildPkg::new();
    let target = b.t.path("target");
    let pkg = b.t.path(&format!("dist/oyster-{VERSION}.pkg"));
    let manifest = repo().join("Cargo.toml");

    let (code, out, calls) = b.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("unsigned") && out.contains(&format!("built {}", pkg.display())),
        "{out}"
    );
    assert_eq!(calls.len(), 6, "{calls:#?}");
    for (call, t) in calls
        .iter()
        .zip(["aarch64-apple-darwin", "x86_64-apple-darwin"])
    {
        assert_eq!(
            call,
            &format!(
                "cargo build --release --locked -p oyster --manifest-path {} --target {t}",
                manifest.display()
            )
        );
    }
    assert!(calls[2].starts_with("lipo -create -output ") && calls[2].ends_with(&format!(
        "/root/usr/local/bin/oyster {0}/aarch64-apple-darwin/release/oyster {0}/x86_64-apple-darwin/release/oyster",
        target.display()
    )), "{}", calls[2]);
    assert!(
        calls[3].starts_with("lipo ")
            && calls[3].ends_with("/usr/local/bin/oyster -verify_arch arm64 x86_64")
    );
    assert!(
        calls[4].starts_with("pkgbuild --root ")
            && calls[4].contains(&format!(
        " --scripts {} --identifier com.oysterun.oyster --version {VERSION} --install-location / ",
        repo().join("packaging/pkg/scripts").display()
    )),
        "{}",
        calls[4]
    );
    assert!(
        calls[5].starts_with("productbuild --distribution ")
            && calls[5].ends_with(&format!(" {}", pkg.display())),
        "{}",
        calls[5]
    );
    assert!(!calls[5].contains("--sign"));
    assert!(pkg.is_file());

    // The payload: the universal binary (executable), the uninstall script (executable), its
    // man page and completions.
    let payload = std::fs::read_to_string(b.t.path("payload.txt")).unwrap();
    assert_eq!(
        payload.lines().collect::<Vec<_>>(),
        [
            "- ./Library/LaunchAgents/com.oysterun.oyster.login.plist",
            "- ./usr/local/share/bash-completion/completions/oyster",
            "- ./usr/local/share/fish/vendor_completions.d/oyster.fish",
            "- ./usr/local/share/man/man1/oyster-agent.1",
            "- ./usr/local/share/man/man1/oyster.1",
            "- ./usr/local/share/zsh/site-functions/_oyster",
            "x ./usr/local/bin/oyster",
            "x ./usr/local/bin/oyster-uninstall",
            "x ./usr/local/libexec/oyster-login",
        ]
    );
    // The distribution productbuild got: both architectures, this version, this component.
    let dist = std::fs::read_to_string(b.t.path("distribution.xml")).unwrap();
    assert!(
        dist.contains(r#"hostArchitectures="arm64,x86_64""#),
        "{dist}"
    );
    assert!(
        !dist.contains("@VERSION@") && dist.contains(&format!(r#"version="{VERSION}""#)),
        "{dist}"
    );
    assert!(
        dist.contains(r#"<pkg-ref id="com.oysterun.oyster" "#)
            && dist.contains(">oyster-component.pkg</pkg-ref>"),
        "{dist}"
    );
    let parsed = Command::new("python3")
        .args(["-c", "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.tag, r.find('options').get('hostArchitectures'))"])
        .arg(b.t.path("distribution.xml"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&parsed.stdout).trim(),
        "installer-gui-script arm64,x86_64"
    );

    // Signed and notarized: the binary with the hardened runtime, the product with the
    // installer identity, then notarytool and stapler on the finished package.
    let app = "Developer ID Application: Oysterun (TEAM123)";
    let inst = "Developer ID Installer: Oysterun (TEAM123)";
    let (code, out, calls) = b.run(&[
        ("CODESIGN_IDENTITY", app),
        ("PKG_SIGN_IDENTITY", inst),
        ("NOTARY_PROFILE", "oyster-notary"),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("unsigned"), "{out}");
    let names: Vec<&str> = calls.iter().map(|c| c.split(' ').next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "cargo",
            "cargo",
            "lipo",
            "lipo",
            "codesign",
            "pkgbuild",
            "productbuild",
            "xcrun",
            "xcrun"
        ]
    );
    assert!(
        calls[4].starts_with(&format!(
            "codesign --force --options runtime --timestamp --sign {app} "
        )),
        "{}",
        calls[4]
    );
    assert!(
        calls[6].ends_with(&format!(" --sign {inst} --timestamp {}", pkg.display())),
        "{}",
        calls[6]
    );
    assert_eq!(
        calls[7],
        format!(
            "xcrun notarytool submit {} --keychain-profile oyster-notary --wait",
            pkg.display()
        )
    );
    assert_eq!(calls[8], format!("xcrun stapler staple {}", pkg.display()));

    // Notarizing unsigned code is refused before anything is built.
    let (code, out, calls) = b.run(&[("NOTARY_PROFILE", "oyster-notary")]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("NOTARY_PROFILE needs PKG_SIGN_IDENTITY and CODESIGN_IDENTITY"),
        "{out}"
    );
    assert!(calls.is_empty(), "{calls:#?}");
}

// ---------------------------------------------------------------------------------------------
// make dist.

/// The triple `rustc` builds for here (its `host:` line), the platform the suite's own build
/// downloaded crates for.
pub(crate) fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let vv = tool(&rustc, &["-vV"], Path::new("."));
    vv.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("rustc -vV has no host line:\n{vv}"))
        .trim()
        .to_owned()
}

pub(crate) fn tool(name: &str, args: &[&str], dir: &Path) -> String {
    let out = Command::new(name)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        out.status.success(),
        "{name} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[ignore = "needs make and a git checkout: make dist archives HEAD (.ci/run runs it)"]
fn make_dist_archives_head_with_its_sha256_and_the_archive_resolves_offline() {
    let in_git = Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(repo())
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        in_git,
        "make dist archives HEAD: run this test in a git checkout (not an unpacked archive)"
    );
    common::needed_tool("make", "apt-get install make");
    let t = TestContext::new();
    let dist = t.path("dist");
    let dist_arg = format!("DISTDIR={}", dist.display());
    tool("make", &["-s", "dist", &dist_arg], repo());
    let name = format!("oyster-{VERSION}.tar.gz");
    let tar = dist.join(&name);

    // The .sha256 is the archive's, in the format `shasum -c` / `sha256sum -c` read.
    let sums = std::fs::read_to_string(dist.join(format!("{name}.sha256"))).unwrap();
    let (sum, file) = sums.trim_end().split_once("  ").unwrap();
    assert_eq!(file, name);
    assert!(
        sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()),
        "{sums}"
    );
    let again = if common::runner_tool("sha256sum").is_some() {
        tool("sha256sum", &[&name], &dist)
    } else {
        tool("shasum", &["-a", "256", &name], &dist)
    };
    assert_eq!(again, sums);
    // Same commit, same bytes: a release's sha256 can be recomputed by anyone.
    let first = std::fs::read(&tar).unwrap();
    tool("make", &["-s", "dist", &dist_arg], repo());
    assert!(
        std::fs::read(&tar).unwrap() == first,
        "make dist is not reproducible"
    );

    // Every file of HEAD, under oyster-<version>/, and nothing else.
    let prefix = format!("oyster-{VERSION}/");
    let mut listed: Vec<String> = tool("tar", &["-tzf", tar.to_str().unwrap()], &dist)
        .lines()
        .filter(|l| !l.ends_with('/'))
        .map(|l| {
            l.strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{l} is outside {prefix}"))
                .to_owned()
        })
        .collect();
    listed.sort();
    let mut tracked: Vec<String> = tool("git", &["ls-tree", "-r", "--name-only", "HEAD"], repo())
        .lines()
        .map(str::to_owned)
        .collect();
    tracked.sort();
    assert_eq!(listed, tracked);

    // Unpacked, it is a complete workspace whose lock file still holds: cargo resolves every
    // member and dependency offline with --locked (a manifest the lock file no longer satisfies
    // fails here). The resolve is filtered to the host platform: an unfiltered `cargo metadata`
    // wants the source of every locked crate, Apple-only ones included, which a fresh machine's
    // cargo cache does not have (only the crates this suite's own build downloaded). The full
    // build is opt-in: it doubles the suite's compile time on a small machine.
    tool("tar", &["-xzf", tar.to_str().unwrap()], t.dir.path());
    let src = t.path(&format!("oyster-{VERSION}"));
    let host = host_triple();
    let meta = tool(
        "cargo",
        &[
            "metadata",
            "--offline",
            "--locked",
            "--filter-platform",
            &host,
            "--format-version",
            "1",
        ],
        &src,
    );
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(
        members
            .iter()
            .any(|m| m.contains(&format!("oyster@{VERSION}"))
                || m.contains(&format!("oyster {VERSION}"))),
        "{members:?}"
    );
    // The same check refuses a manifest the lock file does not satisfy, so it is not a no-op.
    let manifest = src.join("Cargo.toml");
    let pristine = std::fs::read_to_string(&manifest).unwrap();
    let drifted = pristine.replacen("\n[dependencies]\n", "\n[dependencies]\nitoa = \"1\"\n", 1);
    assert_ne!(
        drifted, pristine,
        "the manifest has no [dependencies] table"
    );
    std::fs::write(&manifest, drifted).unwrap();
    let refused = Command::new("cargo")
        .args([
            "metadata",
            "--offline",
            "--locked",
            "--filter-platform",
            &host,
        ])
        .args(["--format-version", "1"])
        .current_dir(&src)
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a drifted manifest resolved");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--locked"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    std::fs::write(&manifest, pristine).unwrap();
    if std::env::var_os("OYSTER_TEST_DIST_BUILD").is_some() {
        let target = t.path("target");
        let out = Command::new("cargo")
            .args(["build", "--offline", "--locked", "-p", "oyster"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = tool(
            target.join("debug/oyster").to_str().unwrap(),
            &["--version"],
            &src,
        );
        assert_eq!(v.trim(), format!("oyster {VERSION}"));
    } else {
        eprintln!("note: set OYSTER_TEST_DIST_BUILD=1 to also build the unpacked archive");
    }
}

// ---------------------------------------------------------------------------------------------
// The Homebrew formula.

pub(crate) fn formula() -> String {
    std::fs::read_to_string(repo().join("Formula/oyster.rb")).unwrap()
}

fn ruby() -> PathBuf {
    common::needed_tool("ruby", "apt-get install ruby")
}

#[test]
fn the_formula_lives_in_a_tap_layout_with_every_stanza() {
    let f = formula();
    assert!(
        !repo().join("packaging/homebrew").exists(),
        "one formula: Formula/oyster.rb"
    );
    let line = |start: &str| {
        f.lines()
            .map(str::trim)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in the formula"))
            .to_owned()
    };
    // url/sha256 only for a release that exists (checked against its tag's archive below).
    formula_matches_its_tag(repo(), &f).unwrap();
    assert_eq!(line("license "), "license \"MIT\"");
    assert!(line("head ").starts_with("head \"https://github.com/oysterun/oyster.git\""));
    assert!(f.contains("livecheck do") && f.contains("strategy :github_latest"));
    // No brew service: it would be a second plist and a second Host on the same port.
    assert!(
        !f.lines().any(|l| l.trim_start().starts_with("service do")),
        "no `service do` block"
    );
    assert!(f.contains("homebrew.mxcl.oyster"), "the comment says why");
    // Nothing pretends to be an Oysterun root; HOME is brew's own testpath.
    assert!(
        !f.contains("pkgshare") && !f.contains("share/\"oyster") && !f.contains("ENV[\"HOME\"]")
    );
    let test = &f[f.find("test do").expect("test do")..];
    for needle in [
        "oyster --version",
        "agent print --root ",
        " --node-bin ",
        "host-service/server.mjs",
    ] {
        assert!(test.contains(needle), "test do lacks {needle:?}");
    }
    let caveats = &f[f.find("def caveats").expect("caveats")..f.find("test do").unwrap()];
    for needle in [
        "oyster setup --root <your Oysterun install>",
        "npm install -g oysterun",
        "oyster agent regenerate",
        "Before `brew uninstall oyster`",
        "oyster agent uninstall --all",
    ] {
        assert!(caveats.contains(needle), "caveats lack {needle:?}");
    }
}

/// The sha256 of `make dist`'s archive of `git_ref` in `dir` (as `git archive` makes it, under
/// `oyster-<version>/`).
pub(crate) fn archive_sha256(dir: &Path, git_ref: &str, version: &str) -> String {
    let out = Command::new("git")
        .args([
            "archive",
            "--format=tar.gz",
            &format!("--prefix=oyster-{version}/"),
            git_ref,
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let sum = child.wait_with_output().unwrap();
    String::from_utf8(sum.stdout).unwrap()[..64].to_owned()
}

/// The `version` of `dir`'s Cargo.toml (its first `version = "…"` line, as the Makefile reads it).
pub(crate) fn cargo_version(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .expect("Cargo.toml has a version line")
        .trim_end_matches('"')
        .to_owned()
}

/// The release rule for `formula` in the repository `dir`. A formula with a `url` names a
/// release vA.B.C: that tag exists, the url is its archive's, and the `sha256` is that of
/// `make dist`'s archive of the tag. A head-only formula (no url, no sha256) is right until the
/// version in Cargo.toml is tagged; once it is, the formula must name that release (run
/// `make release-formula`). Between a release and the next tag (Cargo.toml already bumped) the
/// formula keeps naming the last release. `Ok(false)`: head-only.
pub(crate) fn formula_matches_its_tag(dir: &Path, formula: &str) -> Result<bool, String> {
    let field = |key: &str| {
        formula
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(&format!("{key} \"")))
            .map(|v| v.trim_end_matches('"').to_owned())
    };
    let tagged = |tag: &str| {
        Command::new("git")
            .args(["rev-parse", "-q", "--verify", &format!("refs/tags/{tag}")])
            .current_dir(dir)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let current = cargo_version(dir);
    let current_tag = format!("v{current}");
    let (url, sum) = match (field("url"), field("sha256")) {
        (None, None) if tagged(&current_tag) => {
            return Err(format!(
            "there is a tag {current_tag}, but the formula is head-only; run make release-formula"
        ))
        }
        (None, None) => return Ok(false),
        (Some(url), Some(sum)) => (url, sum),
        (u, s) => {
            return Err(format!(
                "the formula needs both url and sha256 or neither, but has url {u:?}, sha256 {s:?}"
            ))
        }
    };
    let prefix = "https://github.com/oysterun/oyster/releases/download/v";
    let version = url
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_once('/'))
        .filter(|(v, file)| *file == format!("oyster-{v}.tar.gz"))
        .map(|(v, _)| v.to_owned())
        .ok_or_else(|| format!("the url {url:?} is not {prefix}X.Y.Z/oyster-X.Y.Z.tar.gz"))?;
    let tag = format!("v{version}");
    if !tagged(&tag) {
        return Err(format!(
            "the formula names release {tag}, but there is no tag {tag}; a formula is head-only until its release is tagged"
        ));
    }
    if version != current && tagged(&current_tag) {
        return Err(format!(
            "there is a tag {current_tag}, but the formula still names {tag}; run make release-formula"
        ));
    }
    let want = archive_sha256(dir, &tag, &version);
    if sum == want {
        Ok(true)
    } else {
        Err(format!(
            "the sha256 is {sum:?}, but make dist's archive of {tag} has {want}; run make release-formula"
        ))
    }
}

#[test]
fn the_formula_is_head_only_until_a_tag_and_the_readme_says_so() {
    let f = formula();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let quick = readme
        .split("## Quick start")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    if formula_matches_its_tag(repo(), &f).unwrap() {
        assert!(quick.contains("brew install oyster"), "{quick}");
    } else {
        eprintln!("skipped the sha256 check: there is no tag v{VERSION} yet (head-only formula)");
        assert!(f.contains("\n  head \"https://github.com/oysterun/oyster.git\""));
        assert!(quick.contains("brew install --HEAD oyster"), "{quick}");
    }
}

#[test]
fn make_release_formula_writes_the_url_and_sha256_of_the_tags_archive() {
    if common::runner_tool("make").is_none() || common::runner_tool("git").is_none() {
        eprintln!("skipped: make release-formula needs make and git");
        return;
    }
    // A repository with what the release needs, tagged as a release would be.
    let t = TestContext::new();
    let dir = t.path("release");
    for file in [
        "Makefile",
        "Cargo.toml",
        "Formula/oyster.rb",
        "scripts/release-formula.sh",
    ] {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo().join(file), &to).unwrap();
    }
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "release"]);
    let make = |args: &[&str]| {
        Command::new("make")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    // No tag yet: refused, naming the tag; the formula is untouched (and head-only).
    let out = make(&["-s", "release-formula"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no tag v{VERSION}")));
    assert_eq!(
        std::fs::read_to_string(dir.join("Formula/oyster.rb")).unwrap(),
        formula()
    );
    assert!(!formula_matches_its_tag(&dir, &formula()).unwrap());

    git(&["tag", &format!("v{VERSION}")]);
    // A commit after the tag: the archive is the tag's, not HEAD's.
    std::fs::write(dir.join("later.txt"), "after the release\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "later"]);
    let out = make(&["-s", "release-formula"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(dir.join("Formula/oyster.rb")).unwrap();
    assert!(
        formula_matches_its_tag(&dir, &written).unwrap(),
        "{written}"
    );
    let sum =
        std::fs::read_to_string(dir.join(format!("dist/oyster-{VERSION}.tar.gz.sha256"))).unwrap();
    assert!(
        written.contains(&format!("sha256 \"{}\"", &sum[..64])),
        "{written}"
    );
    assert_ne!(archive_sha256(&dir, "HEAD", VERSION), sum[..64]);
    // Once: a second run replaces the pair instead of adding one.
    assert!(make(&["-s", "release-formula"]).status.success());
    let again = std::fs::read_to_string(dir.join("Formula/oyster.rb")).unwrap();
    assert_eq!(again, written);
    assert_eq!(again.matches("\n  sha256 \"").count(), 1);
    // A committed sha256 that is not the tag's archive is caught.
    let tampered = written.replace(&sum[..64], &"0".repeat(64));
    let err = formula_matches_its_tag(&dir, &tampered).unwrap_err();
    assert!(err.contains("run make release-formula"), "{err}");
}

#[test]
#[ignore = "needs ruby (.ci/run installs and runs it)"]
fn the_formula_is_valid_ruby() {
    let ruby = ruby();
    let out = Command::new(ruby)
        .arg("-c")
        .arg(repo().join("Formula/oyster.rb"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Syntax OK");
}

/// Enough of Homebrew's Formula DSL to load the formula and run its `test do` and `caveats`
/// the way `brew test` does: as instance methods, with HOME = testpath. Plain Ruby 2.6 (the
/// macOS system Ruby): no endless methods.
const BREW_STUB: &str = r##"
require "open3"
require "pathname"

class Formula
  class << self
    attr_reader :stub_url

    def url(value, **)
      @stub_url = value
    end
    def test(&block)
      define_method(:stub_test, &block)
    end
    def method_missing(*, **)
      nil
    end
    def respond_to_missing?(*)
      true
    end

    def [](name)
      raise "the test asks for an unexpected formula: #{name}" unless name == "node"

      Struct.new(:opt_bin).new(Pathname(ENV.fetch("STUB_NODE_DIR")))
    end
  end

  class StubVersion
    def initialize(string, head)
      @string = string
      @head = head
    end
    def to_s
      @string
    end
    def head?
      @head
    end
  end

  def bin
    Pathname(ENV.fetch("STUB_BIN_DIR"))
  end
  def testpath
    Pathname(ENV.fetch("HOME"))
  end
  # A head-only formula (no release yet) is a HEAD build, as `brew install --HEAD` makes.
  def version
    url = self.class.stub_url
    return StubVersion.new("HEAD", true) unless url

    StubVersion.new(url[%r{/oyster-(\d+\.\d+\.\d+)\.tar\.gz\z}, 1], false)
  end

  def shell_output(cmd, result = 0)
    out, status = Open3.capture2(cmd)
    raise "#{cmd} exited #{status.exitstatus}, not #{result}" unless status.exitstatus == result

    out
  end

  def assert_match(pattern, text)
    found = pattern.is_a?(Regexp) ? pattern.match?(text) : text.include?(pattern)
    raise "expected #{pattern.inspect} in:\n#{text}" unless found
  end
end

load ARGV.fetch(0)
formula = Oyster.new
puts formula.caveats
formula.stub_test
puts "formula test passed"
"##;

#[test]
#[ignore = "needs ruby (.ci/run installs and runs it)"]
fn the_formula_test_block_passes_against_the_real_binary() {
    let ruby = ruby();
    let t = TestContext::new();
    let stub = t.path("brew_stub.rb");
    std::fs::write(&stub, BREW_STUB).unwrap();
    let bin = Path::new(common::BIN).parent().unwrap();
    let node = common::real_node();
    let out = Command::new(ruby)
        .arg(&stub)
        .arg(repo().join("Formula/oyster.rb"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &t.home)
        .env("STUB_BIN_DIR", bin)
        .env("STUB_NODE_DIR", node.parent().unwrap())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("formula test passed"), "{text}");
    assert!(
        text.contains("oyster setup --root <your Oysterun install>"),
        "{text}"
    );
    // It wrote nothing outside its stub root.
    let left: Vec<_> = std::fs::read_dir(&t.home)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("oysterun")]);
}

#[test]
#[ignore = "needs shellcheck (.ci/run installs and runs it)"]
fn shipped_shell_is_shellcheck_clean() {
    let shellcheck = common::needed_tool("shellcheck", "apt-get install shellcheck");
    let version = Command::new(shellcheck).arg("--version").output().unwrap();
    assert!(version.status.success());
    for (file, shell) in [
        ("packaging/pkg/scripts/postinstall", "sh"),
        ("packaging/pkg/oyster-uninstall", "sh"),
        ("packaging/pkg/oyster-login", "sh"),
        ("scripts/release-formula.sh", "bash"),
        ("packaging/pkg/build-pkg.sh", "bash"),
        ("scripts/demo.sh", "bash"),
        ("scripts/apple-toolchain.sh", "bash"),
        ("scripts/check-macos.sh", "bash"),
        ("scripts/test-fresh.sh", "bash"),
        (".ci/run", "bash"),
    ] {
        let out = Command::new("shellcheck")
            .args(["-s", shell])
            .arg(repo().join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn a_man_page_per_subcommand_with_the_sections_a_reader_expects_installed_by_make() {
    let t = TestContext::new();
    let dir = t.path("man1");
    t.run(["man", "--dir", dir.to_str().unwrap()]).ok();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in [
        "oyster.1",
        "oyster-agent.1",
        "oyster-logs.1",
        "oyster-status.1",
    ] {
        assert!(pages.contains(&page.to_owned()), "{pages:?}");
    }
    // The hidden helper the completion scripts call has no page.
    assert!(!pages.iter().any(|p| p.contains("__complete")), "{pages:?}");
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        let name = page.trim_end_matches(".1");
        assert!(text.contains(&format!("\n.TH {name} 1")), "{page}");
        for section in [
            "NAME",
            "SYNOPSIS",
            "EXAMPLES",
            "FILES",
            "ENVIRONMENT",
            "EXIT STATUS",
            "SEE ALSO",
        ] {
            assert!(
                text.contains(&format!("\n.SH {section}\n")),
                "{page} lacks {section}"
            );
        }
        assert!(text.contains("OYSTERUN_STACKS_DIR"), "{page}");
    }
    let agent = std::fs::read_to_string(dir.join("oyster-agent.1")).unwrap();
    assert!(agent.contains("oyster agent stop"), "its own examples");
    assert!(
        !agent.contains("agent\\-stop(1)") && agent.contains("oyster agent stop"),
        "no page is named that does not exist"
    );
    let main = std::fs::read_to_string(dir.join("oyster.1")).unwrap();
    assert!(
        main.contains("oyster\\-agent(1)"),
        "oyster(1) points at the pages"
    );
    // `oyster man` alone still prints the main page (what older packaging ran).
    assert!(t.run(["man"]).ok().stdout().contains("\n.TH oyster 1"));
    // make install/uninstall, the formula and the .pkg install all of them.
    let makefile = std::fs::read_to_string(repo().join("Makefile")).unwrap();
    let listed: Vec<String> = makefile
        .split("MANPAGES = ")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .split_whitespace()
        .filter(|w| *w != "\\")
        .map(|w| format!("{w}.1"))
        .collect();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(listed_sorted, pages, "Makefile MANPAGES");
    assert!(makefile.contains("oyster man --dir $(SHAREDIR)/man/man1"));
    assert!(formula().contains("system bin/\"oyster\", \"man\", \"--dir\", man1"));
    let pkg = std::fs::read_to_string(repo().join("packaging/pkg/build-pkg.sh")).unwrap();
    assert!(pkg.contains("\"$bin\" man --dir \"$share/man/man1\""));
}

// ---------------------------------------------------------------------------------------------
// The .pkg's uninstall story: `sudo oyster-uninstall`, against the same recording fakes.

/// What the package installed, relative to / (as `pkgutil --files` lists it: directories too).
pub(crate) const PKG_FILES: &[&str] = &[
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
    pub(crate) fn install_payload(&self) {
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
    pub(crate) fn agent_running(&self, user: &str, label: &str, program: &str) -> PathBuf {
        let plist = self.agents_dir(user).join(format!("{label}.plist"));
        std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
        let mut top = plist::Dictionary::new();
        top.insert("Label".into(), label.into());
        top.insert(
            "ProgramArguments".into(),
            plist::Value::Array(vec![program.into(), "host".into(), "exec".into()]),
        );
        plist::Value::Dictionary(top).to_file_xml(&plist).unwrap();
        plist
    }

    pub(crate) fn uninstall(&self, console: Option<&str>, env: &[(&str, &str)]) -> Outcome {
        let mut c = Command::new("/bin/sh");
        // Without a terminal it removes nothing unless told to (tests/it/fleet_pkg.rs).
        c.arg(repo().join("packaging/pkg/oyster-uninstall"))
            .arg("--yes");
        c.env_clear()
            .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", "/var/root")
            .env("OYSTER_PKG_SYSROOT", &self.sys);
        if let Some(user) = console {
            c.env("FAKE_CONSOLE", user);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let calls = std::fs::read_to_string(&self.log)
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        Outcome {
            code: out.status.code().unwrap_or(-1),
            out: String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
            calls,
        }
    }
}

#[test]
fn oyster_uninstall_boots_out_every_stack_removes_the_payload_and_forgets_the_receipt() {
    let p = Pkg::new();
    p.install_payload();
    let oyster = "/usr/local/bin/oyster";
    let prod = p.agent_running("asmith", "com.oysterun.host", oyster);
    let dev = p.agent_running(
        "asmith",
        "com.oysterun.host.dev",
        "/opt/homebrew/bin/oyster",
    );
    // Oysterun's own installer's plist is not oyster's to remove.
    let theirs = p.agent_running("asmith", "com.oysterun.host.legacy", "/bin/bash");
    let config = p.home("asmith").join(".oysterun/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "{}").unwrap();

    // Not as root: refused, nothing touched.
    let o = p.uninstall(Some("asmith"), &[("FAKE_EUID", "501")]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains("sudo oyster-uninstall"), "{}", o.out);
    assert_eq!(o.calls, vec!["id -u as=root".to_owned()]);
    assert!(prod.exists() && p.sys.join("usr/local/bin/oyster").exists());

    let o = p.uninstall(Some("asmith"), &[]);
    o.exits_0_saying(&[
        "done: oyster is uninstalled.",
        "kept asmith's Oysterun config",
    ]);
    let uid = p.account("asmith").uid;
    for job in ["com.oysterun.host", "com.oysterun.host.dev"] {
        assert!(
            o.calls
                .contains(&format!("launchctl bootout gui/{uid}/{job} as=root")),
            "{:#?}",
            o.calls
        );
    }
    assert!(!o
        .calls
        .iter()
        .any(|c| c.contains("legacy") && c.starts_with("launchctl")));
    assert!(!prod.exists() && !dev.exists(), "{}", o.out);
    assert!(
        theirs.exists() && o.out.contains("another installer wrote it"),
        "{}",
        o.out
    );
    assert!(config.exists(), "the user's config stays");
    for rel in PKG_FILES {
        let path = p.sys.join(rel);
        if rel.contains('.') || rel.ends_with("oyster") || rel.ends_with("uninstall") {
            assert!(!path.exists(), "{rel} is still there");
        } else {
            assert!(path.is_dir(), "a directory ({rel}) was removed");
        }
    }
    let pkgutil: Vec<&String> = o
        .calls
        .iter()
        .filter(|c| c.starts_with("pkgutil"))
        .collect();
    assert_eq!(
        pkgutil,
        [
            "pkgutil --files com.oysterun.oyster as=root",
            "pkgutil --forget com.oysterun.oyster as=root"
        ]
    );

    // Again: nothing left to remove, and pkgutil no longer knows the package: named, exit 1.
    let o = p.uninstall(Some("asmith"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(
        o.out
            .contains("pkgutil knows no package com.oysterun.oyster"),
        "{}",
        o.out
    );
}

#[test]
fn oyster_uninstall_with_nobody_logged_in_still_removes_the_payload() {
    let p = Pkg::new();
    p.install_payload();
    let prod = p.agent_running("alice", "com.oysterun.host", "/usr/local/bin/oyster");
    // Not loaded (bootout fails): the plist goes anyway.
    let o = p.uninstall(None, &[("FAKE_BOOTOUT_EXIT", "3")]);
    o.exits_0_saying(&[
        "nobody is logged in",
        "oyster agent uninstall --all",
        "done",
    ]);
    assert!(prod.exists(), "another user's agent is theirs");
    assert!(!p.sys.join("usr/local/bin/oyster").exists());
    let o = {
        p.install_payload();
        p.uninstall(Some("alice"), &[("FAKE_BOOTOUT_EXIT", "3")])
    };
    o.exits_0_saying(&["removed"]);
    assert!(!prod.exists(), "{}", o.out);
}

/// The README's quick start lists only commands that parse (each is run with `--help`, which
/// clap answers only for a verb and flags that exist), and every verb of `--help` is in it.
#[test]
fn the_readme_lists_only_commands_that_exist_and_every_verb() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let quick = readme
        .split("## Quick start")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let t = TestContext::new();
    let mut seen = 0;
    for line in quick
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("oyster "))
    {
        let cmd = line.split("  #").next().unwrap().trim();
        let mut args: Vec<String> = vec![];
        // The words as a shell would split them (`""` is one empty word).
        for w in cmd.split_whitespace().skip(1) {
            args.push(w.trim_matches('"').to_owned());
        }
        args.push("--help".into());
        let r = t.run(&args);
        assert_eq!(
            r.code(),
            0,
            "README: `{cmd}` does not parse: {}",
            r.stderr()
        );
        seen += 1;
    }
    assert!(seen >= 8, "{quick}");
    let help = t.run(["--help"]).ok().stdout();
    let verbs = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .filter(|v| v != "help");
    for verb in verbs {
        assert!(
            readme.contains(&format!("`oyster {verb}")),
            "README lacks `oyster {verb}`"
        );
    }
    for alias in ["alias `info`", "alias `ls`", "oyster-uninstall", "--all"] {
        assert!(readme.contains(alias), "README lacks {alias}");
    }
}

#[test]
fn oyster_uninstall_keeps_a_listed_directory_that_is_the_users_symlink() {
    let p = Pkg::new();
    // The user keeps /usr/local/bin as a symlink to a directory of their own; the package
    // installed into it, and pkgutil lists `usr/local/bin` as one of its directories.
    let mine = p.sys.join("opt/mybin");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("their-tool"), "theirs").unwrap();
    std::fs::create_dir_all(p.sys.join("usr/local")).unwrap();
    std::os::unix::fs::symlink(&mine, p.sys.join("usr/local/bin")).unwrap();
    p.install_payload();
    let o = p.uninstall(None, &[]);
    assert_eq!(o.code, 0, "{}", o.out);
    let link = p.sys.join("usr/local/bin");
    assert!(
        std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()),
        "the user's symlink /usr/local/bin was removed: {}",
        o.out
    );
    assert!(mine.join("their-tool").exists());
    assert!(!mine.join("oyster").exists(), "{}", o.out);
}
