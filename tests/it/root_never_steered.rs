//! The seams, round 4 (issue 40): root never acts on what a user names, and managed values
//! always win. Each through the binary, with real separate uids where users matter (the
//! tests run as root and chown throwaway homes to uids no account has). The uninstall
//! script's part is in `pkg_uninstall_names.rs`, the managed values' in `managed_values_win.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::common::has_all;
use crate::common::{TestContext, BIN};

/// A uid no account on the test machine has: the owner of a throwaway home.
pub(crate) const STRANGER: u32 = 61_234;

/// `path` (not what it links to) now belongs to `uid`.
pub(crate) fn lchown(path: &Path, uid: u32) {
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        path,
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(uid)),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// Every file under `dir`, with its bytes (a link as its target's name).
fn contents(dir: &Path) -> Vec<(String, String)> {
    let mut out = vec![];
    for e in walk(dir) {
        let m = std::fs::symlink_metadata(&e).unwrap();
        let what = if m.file_type().is_symlink() {
            format!("-> {}", std::fs::read_link(&e).unwrap().display())
        } else if m.is_dir() {
            "dir".to_owned()
        } else {
            std::fs::read_to_string(&e).unwrap()
        };
        out.push((e.display().to_string(), what));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        out.push(p.clone());
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

/// Item 2: `sudo oyster cleanup --yes --purge` under a HOME another uid owns is refused like
/// every writing verb (exit 2, naming the owner) and touches nothing; under its own HOME, a
/// `~/.oysterun-stacks` that is a link to root's stack-shaped files keeps every stack it
/// reaches, named, and removes nothing through it.
#[test]
#[ignore = "needs root: chowns HOME to another uid (.ci/run runs it)"]
fn a_root_cleanup_under_a_foreign_home_is_refused_and_never_deletes_through_a_link() {
    crate::common::need_root();
    let t = TestContext::new();
    // Root's files, shaped like stacks: a leftover and one with a config and logs.
    let victim = t.path("var-victim");
    for (rel, text) in [
        ("dev/run/oyster.lock", ""),
        ("dev/run/node-version.cache", "v22"),
        ("qa/host/config.json", "{\"keep\": true}"),
        ("qa/logs/oysterun-host.log", "root's log"),
    ] {
        let p = victim.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let link = t.home.join(".oysterun-stacks");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let before = contents(&victim);
    lchown(&t.home, STRANGER);
    lchown(&link, STRANGER);
    for args in
        [&["cleanup", "--yes", "--purge"][..], &["cleanup", "--yes"], &["cleanup", "--dry-run"]]
    {
        let r = t.run(args).fails_with(2);
        r.stderr_has("belongs to uid 61234");
        r.stderr_has("sudo -u");
        assert_eq!(contents(&victim), before, "{args:?} touched root's files");
    }
    // The same HOME, root's own: every stack reached through the link is kept, named.
    lchown(&t.home, 0);
    lchown(&link, 0);
    let r = t.run(["cleanup", "--yes", "--purge"]).ok();
    let out = r.stdout();
    has_all(&out, &["kept    dev:", "kept    qa:"]);
    has_all(&out, &["~/.oysterun-stacks is a symlink", "cleanup removes nothing through it"]);
    assert_eq!(contents(&victim), before, "removed through the link:\n{out}");
}

/// Root running cleanup with a HOME it owns but anyone may write (`/tmp`, 1777: what a daemon
/// or a script may run with): `~/.oysterun-stacks` there is another user's, who could swap a
/// part of a stack for a link between cleanup's look and its removal. Every stack in it is
/// kept, named, nothing removed; so is a stack in a stacks directory others may write without
/// the sticky bit, and one another uid owns in a shared sticky stacks directory.
#[test]
#[ignore = "needs root: directories of another uid (.ci/run runs it)"]
fn a_root_cleanup_removes_nothing_of_another_users_nor_through_a_directory_others_may_write() {
    crate::common::need_root();
    let t = TestContext::new();
    std::fs::set_permissions(&t.home, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let stacks = t.home.join(".oysterun-stacks");
    for (rel, text) in [
        ("dev/run/oyster.lock", ""),
        ("dev/run/node-version.cache", "v22"),
        ("qa/host/config.json", "{\"keep\": true}"),
    ] {
        let p = stacks.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    for e in std::iter::once(stacks.clone()).chain(walk(&stacks)) {
        lchown(&e, STRANGER);
    }
    let before = contents(&stacks);
    let out = t.run(["cleanup", "--yes", "--purge"]).ok().stdout();
    has_all(&out, &["kept    dev:", "kept    qa:"]);
    has_all(&out, &["belongs to uid 61234, not to the user running cleanup"]);
    assert_eq!(contents(&stacks), before, "removed another user's files:\n{out}");
    // The stacks directory root's but writable by all without the sticky bit: kept.
    for e in std::iter::once(stacks.clone()).chain(walk(&stacks)) {
        lchown(&e, 0);
    }
    std::fs::set_permissions(&stacks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = t.run(["cleanup", "--yes", "--purge"]).ok().stdout();
    has_all(&out, &["may be written by others (mode 0777)"]);
    assert!(stacks.join("dev/run/oyster.lock").exists(), "{out}");
    // Shared with the sticky bit: root's own stack goes, another uid's stays.
    std::fs::set_permissions(&stacks, std::fs::Permissions::from_mode(0o1777)).unwrap();
    for e in std::iter::once(stacks.join("qa")).chain(walk(&stacks.join("qa"))) {
        lchown(&e, STRANGER);
    }
    let out = t.run(["cleanup", "--yes", "--purge"]).ok().stdout();
    assert!(!stacks.join("dev").exists(), "{out}");
    assert!(stacks.join("qa/host/config.json").exists(), "{out}");
}

/// Item 6: an organization name holding a character XML 1.0 cannot carry (U+FFFE, U+FFFF)
/// is refused (exit 2, naming it) before anything is written, to a file or to stdout.
#[test]
fn mdm_profile_refuses_an_organization_xml_cannot_carry_before_writing() {
    let t = TestContext::new();
    let target = t.path("p.mobileconfig");
    for (org, named) in [("Example\u{FFFE}", "U+FFFE"), ("\u{FFFF}Inc", "U+FFFF")] {
        let r = t
            .run(["mdm", "profile", "--output", target.to_str().unwrap(), "--organization", org])
            .fails_with(2);
        r.stderr_has(named);
        r.stderr_has("XML 1.0");
        assert!(!target.exists(), "{org:?}: a profile was written");
        let r = t.run(["mdm", "profile", "--organization", org]).fails_with(2);
        assert_eq!(r.stdout(), "", "{org:?}: a profile reached stdout");
    }
    // The last character before them is XML, and is written.
    t.run([
        "mdm",
        "profile",
        "--output",
        target.to_str().unwrap(),
        "--organization",
        "Example\u{FFFD}",
    ])
    .ok();
    let text = std::fs::read_to_string(&target).unwrap();
    has_all(&text, &["Example\u{FFFD}"]);
}

/// oyster copied to `dir` (created with `mode`, owned by `uid`), run as root with `args` and
/// the test's environment.
fn copy_run(t: &TestContext, dir: &Path, uid: u32, mode: u32, args: &[&str]) -> crate::common::Run {
    std::fs::create_dir_all(dir).unwrap();
    let exe = dir.join("oyster");
    if !exe.exists() {
        std::fs::copy(BIN, &exe).unwrap();
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    lchown(dir, uid);
    // The test's own environment (HOME, PATH, no launchd), for the copy.
    let env = t.cmd();
    let mut run = Command::new(&exe);
    run.env_clear().args(args).current_dir(t.dir.path());
    for (k, v) in env.get_envs() {
        run.env(k, v.unwrap_or_default());
    }
    crate::common::Run(run.output().unwrap())
}

/// Item 3: run as root, oyster refuses (exit 1) when its own file or a directory above it
/// can be changed by another uid or by a group — as Homebrew's `/usr/local/bin` on an Intel
/// Mac belongs to a user — naming that path and the .pkg's root-owned copy; nothing is done.
/// A sticky directory (`/tmp`), a root-owned one, and a run as another user pass.
#[test]
#[ignore = "needs root: chowns the directory holding a copy of oyster (.ci/run runs it)"]
fn a_root_run_of_an_oyster_another_uid_or_a_group_could_replace_is_refused() {
    crate::common::need_root();
    let t = TestContext::new();
    std::fs::set_permissions(t.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The target directory oyster was built in is root's: the suite's own runs pass the check.
    t.run(["list"]).ok();
    let homebrew = t.path("usr-local-bin");
    for (uid, mode, why) in [
        (STRANGER, 0o755, "belongs to uid 61234, not root"),
        (0, 0o775, "is writable by its group (mode 0775)"),
        (0, 0o757, "is writable by everyone (mode 0757)"),
    ] {
        let r = copy_run(&t, &homebrew, uid, mode, &["setup", "--yes"]);
        assert_eq!(r.code(), 1, "{why}: {}", r.stderr());
        let err = r.stderr();
        has_all(
            &err,
            &[
                &format!("{} {why}", homebrew.display()),
                "could replace the program root runs; nothing was done",
                "/Library/Oysterun/bin/oyster",
            ],
        );
        assert!(!t.home.join(".oysterun").exists(), "{why}: setup wrote");
    }
    // The same file, one directory lower in a root-owned one: the culprit is still named.
    let r = copy_run(&t, &homebrew.join("sub"), 0, 0o755, &["list"]);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    r.stderr_has(&format!("{} is writable by everyone", homebrew.display()));
    // --version is the parser's, before the check (the .pkg's postinstall asks it).
    copy_run(&t, &homebrew, STRANGER, 0o755, &["--version"]).ok();
    // Root's own directory, and a sticky one like /tmp: run.
    copy_run(&t, &homebrew, 0, 0o755, &["list"]).ok();
    copy_run(&t, &homebrew, 0, 0o1777, &["list"]).ok();
    // Not root: the check is root's (a user may run what they can replace).
    let exe = homebrew.join("oyster");
    lchown(&homebrew, STRANGER);
    let home = t.path("stranger-home");
    std::fs::create_dir_all(&home).unwrap();
    lchown(&home, STRANGER);
    let out = Command::new("setpriv")
        .args(["--reuid=61234", "--regid=61234", "--clear-groups"])
        .arg(&exe)
        .arg("list")
        .env_clear()
        .env("HOME", &home)
        .env("OYSTER_LAUNCHCTL", "none")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The lock outside the stack is each user's own (in their HOME): root — or another user —
/// pointed at someone else's stacks (`OYSTERUN_STACKS_DIR`) would not wait for the owner's
/// oyster. A writing verb on a stack another uid owns is refused (exit 2) before it waits or
/// writes, naming the owner; a read (`status`) still answers.
#[test]
#[ignore = "needs root: a stack directory of another uid (.ci/run runs it)"]
fn a_writing_verb_on_a_stack_another_uid_owns_is_refused_before_it_writes() {
    crate::common::need_root();
    let mut t = TestContext::new();
    let shared = t.path("their-stacks");
    let config = shared.join("dev/host/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "{\"port\": 4242}").unwrap();
    for e in std::iter::once(shared.join("dev")).chain(walk(&shared.join("dev"))) {
        lchown(&e, STRANGER);
    }
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), shared.display().to_string()));
    let before = contents(&shared);
    for args in [
        &["config", "sync", "--stack", "dev", "--port", "4343"][..],
        &["env", "set", "HTTPS_PROXY", "http://proxy:3128", "--stack", "dev", "--no-restart"],
        &["host", "stop", "--stack", "dev"],
        &["host", "start", "--stack", "dev", "--port", "4545"],
    ] {
        let r = t.run(args).fails_with(2);
        // The hint repeats the command (its options too, never a value it was given), as the
        // owner, whom sudo knows by `#UID` when no account has the uid.
        let hint = match args[0] {
            "config" => "`sudo -u '#61234' -H oyster config sync --port 4343 --stack dev`",
            "env" => "`sudo -u '#61234' -H oyster env set HTTPS_PROXY --value-stdin --stack dev`",
            _ if args[1] == "start" => {
                "`sudo -u '#61234' -H oyster host start --port 4545 --stack dev`"
            }
            _ => "`sudo -u '#61234' -H oyster host stop --stack dev`",
        };
        has_all(&r.stderr(), &["belongs to uid 61234", "would not wait for it", hint]);
    }
    assert_eq!(contents(&shared), before, "a refused verb wrote into another uid's stack");
    t.run(["status", "dev", "--json"]);
}

/// `uninstall --purge` of a stack that is not installed deletes without taking the lock, which
/// is where a writing verb refused a stack another uid owns: root with `OYSTERUN_STACKS_DIR` at
/// another user's stacks deleted one (`Deleted … (2 files)`, exit 0). It is refused (exit 2)
/// before the question, as are the dry runs of the job verbs and of setup (which take no lock),
/// through a stack directory that is a link to the other uid's too; the reads still answer.
#[test]
#[ignore = "needs root: a stack directory of another uid (.ci/run runs it)"]
fn a_purge_or_a_dry_run_on_a_stack_another_uid_owns_is_refused() {
    crate::common::need_root();
    let mut t = TestContext::new();
    let shared = t.path("their-stacks");
    let theirs = t.path("their-dev");
    std::fs::create_dir_all(shared.join("dev/host")).unwrap();
    std::fs::create_dir_all(shared.join("dev/logs")).unwrap();
    std::fs::write(shared.join("dev/host/config.json"), "{\"port\": 4242}").unwrap();
    std::fs::write(shared.join("dev/logs/oysterun-host.log"), "a line\n").unwrap();
    std::fs::create_dir_all(theirs.join("host")).unwrap();
    std::fs::write(theirs.join("host/config.json"), "{\"port\": 4343}").unwrap();
    for e in [shared.join("dev"), theirs.clone()]
        .into_iter()
        .chain(walk(&shared.join("dev")))
        .chain(walk(&theirs))
    {
        lchown(&e, STRANGER);
    }
    // Root's own link, to the other uid's directory.
    std::os::unix::fs::symlink(&theirs, shared.join("linked")).unwrap();
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), shared.display().to_string()));
    let before = (contents(&shared), contents(&theirs));
    for stack in ["dev", "linked"] {
        for args in [
            &["uninstall", stack, "--purge", "--yes"][..],
            &["uninstall", stack, "--purge", "--dry-run"],
            &["stop", stack, "--dry-run"],
            &["start", stack, "--dry-run"],
            &["restart", stack, "--dry-run"],
            &["install", stack, "--dry-run"],
            &["setup", stack, "--dry-run"],
            &["setup", stack, "--yes", "--no-install-providers"],
        ] {
            let r = t.run(args).fails_with(2);
            has_all(&r.stderr(), &["belongs to uid 61234", "would not wait for it"]);
        }
    }
    assert_eq!(
        (contents(&shared), contents(&theirs)),
        before,
        "a refused verb changed another uid's stack"
    );
    for args in [
        &["list"][..],
        &["logs", "dev"],
        &["config", "show", "dev"],
        &["env", "list", "--stack", "dev"],
    ] {
        t.run(args).ok();
    }
}

/// The refusal of `providers set`/`providers auto` on a stack (or a HOME) another uid owns
/// names the command as typed, one the owner can run: before, both said `providers set P`
/// without the command (a usage error when run), and `auto` was named `set`.
#[test]
#[ignore = "needs root: a stack directory of another uid (.ci/run runs it)"]
fn a_refused_providers_edit_names_the_command_as_typed() {
    crate::common::need_root();
    let mut t = TestContext::new();
    let shared = t.path("their-stacks");
    std::fs::create_dir_all(shared.join("dev/host")).unwrap();
    std::fs::write(shared.join("dev/host/config.json"), "{\"port\": 4242}").unwrap();
    for e in std::iter::once(shared.join("dev")).chain(walk(&shared.join("dev"))) {
        lchown(&e, STRANGER);
    }
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), shared.display().to_string()));
    for (args, hint) in [
        (
            &["providers", "auto", "codex", "--stack", "dev"][..],
            "-H oyster providers auto codex --stack dev`",
        ),
        (
            &["providers", "set", "codex", "", "--stack", "dev"],
            "-H oyster providers set codex '' --stack dev`",
        ),
        (
            &["providers", "set", "claude", "/opt/my tools/claude", "--stack", "dev"],
            "-H oyster providers set claude '/opt/my tools/claude' --stack dev`",
        ),
    ] {
        let r = t.run(args).fails_with(2);
        has_all(&r.stderr(), &["belongs to uid 61234", hint]);
    }
    lchown(&t.home, STRANGER);
    let r = t.run(["providers", "set", "codex", ""]).fails_with(2);
    has_all(&r.stderr(), &["`oyster providers set codex ''`", "-H oyster providers set codex ''`"]);
}

/// A stack not created yet, in a stacks directory (`OYSTERUN_STACKS_DIR`) another uid owns:
/// refused (exit 2) before it is created. Before, `config sync new --port N` as root made a
/// 0700 root-owned stack in the other user's directory, one their oyster could not read. A
/// sticky directory everyone writes in (/tmp) is not another uid's.
#[test]
#[ignore = "needs root: a stacks directory of another uid (.ci/run runs it)"]
fn a_new_stack_in_a_stacks_directory_another_uid_owns_is_refused() {
    crate::common::need_root();
    let mut t = TestContext::new();
    let shared = t.path("their-stacks");
    std::fs::create_dir_all(&shared).unwrap();
    lchown(&shared, STRANGER);
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), shared.display().to_string()));
    let port = crate::common::free_port().to_string();
    for args in [
        &["config", "sync", "newone", "--port", &port][..],
        &["setup", "newone", "--port", &port, "--dry-run"],
        &["install", "newone", "--port", &port, "--dry-run"],
        &["host", "start", "newone", "--port", &port],
    ] {
        let r = t.run(args).fails_with(2);
        has_all(&r.stderr(), &["their-stacks belongs to uid 61234"]);
    }
    assert!(walk(&shared).is_empty(), "a refused verb created a stack in another uid's directory");
    let sticky = t.path("everyones");
    std::fs::create_dir_all(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    lchown(&sticky, STRANGER);
    t.extra_env.retain(|(k, _)| k != "OYSTERUN_STACKS_DIR");
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), sticky.display().to_string()));
    t.run(["config", "sync", "newone", "--port", &port]).ok();
}
