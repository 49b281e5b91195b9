//! Which `node` runs the Host (docs/behaviour.md §3): the first one in the search order that
//! is Node 20 or newer, each older one before it named; and the exit codes of a Node or an
//! Oysterun root that is missing or too old, by where it came from (docs/behaviour.md "Exit
//! codes": 2 for what the user typed, 1 for what oyster found on the machine).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::has_all;
use crate::common::{self, args, TestContext};

/// A fake `node` in `<test dir>/<dir>/node` that appends `<its path> <its arguments>` to
/// `<test dir>/node-runs.log`, then prints `version` (as `node --version` does).
fn fake_node(t: &TestContext, dir: &str, version: &str) -> PathBuf {
    let p = t.path(&format!("{dir}/node"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"$0 $*\" >> '{}'\necho {version}\n",
            t.path("node-runs.log").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Each line of the fake nodes' log: `<path> <arguments>`.
fn node_runs(t: &TestContext) -> Vec<String> {
    std::fs::read_to_string(t.path("node-runs.log"))
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn on_path(t: &mut TestContext, nodes: &[&Path]) {
    t.path_dirs = nodes.iter().map(|n| n.parent().unwrap().into()).collect();
}

/// Only where no system node sits in the fallback directories (as on this Linux): there it
/// would be a candidate after PATH.
/// A HOME with the Host fixture at `<test dir>/root`, only where [`no_system_node`].
fn without_system_node() -> Option<(TestContext, PathBuf)> {
    if !no_system_node() {
        return None;
    }
    let t = TestContext::new();
    let root = t.fixture_root("root");
    Some((t, root))
}

fn no_system_node() -> bool {
    let none =
        !["/opt/homebrew/bin/node", "/usr/local/bin/node"].iter().any(|p| Path::new(p).exists());
    if !none {
        eprintln!("skipped: a node in /opt/homebrew/bin or /usr/local/bin is a candidate too");
    }
    none
}

fn print_args(root: &Path) -> Vec<String> {
    vec!["agent".into(), "print".into(), "--root".into(), root.display().to_string()]
}

/// The `OYSTERUN_NODE_BIN` a printed plist pins.
fn pinned(plist: &str) -> String {
    let doc = common::plistlib(plist.as_bytes());
    doc["EnvironmentVariables"]["OYSTERUN_NODE_BIN"].as_str().unwrap().to_owned()
}

#[test]
fn the_first_node_new_enough_on_path_is_pinned_and_the_older_ones_before_it_are_named() {
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    let old = fake_node(&t, "a", "v18.19.0");
    let broken = fake_node(&t, "b", "not-a-version");
    let good = fake_node(&t, "c", "v22.1.0");
    let later = fake_node(&t, "d", "v24.0.0");
    on_path(&mut t, &[&old, &broken, &good, &later]);

    let r = t.run(print_args(&root)).ok();
    assert_eq!(pinned(&r.stdout()), good.display().to_string());
    let note = format!(
        "oyster: note: using node {} (v22.1.0), the first found that is Node 20 or newer; \
         passed over {} (v18.19.0), {} (printed \"not-a-version\" for --version)\n",
        good.display(),
        old.display(),
        broken.display()
    );
    assert_eq!(r.stderr(), note);
    // Discovery ran each candidate up to the one taken, with `--version` and nothing else.
    assert_eq!(
        node_runs(&t),
        [old.clone(), broken, good.clone()]
            .iter()
            .map(|p| format!("{} --version", p.display()))
            .collect::<Vec<_>>()
    );

    // The first one already new enough: taken with no note, nothing after it run.
    std::fs::remove_file(t.path("node-runs.log")).unwrap();
    on_path(&mut t, &[&good, &old]);
    let r = t.run(print_args(&root)).ok();
    assert_eq!(pinned(&r.stdout()), good.display().to_string());
    assert_eq!(r.stderr(), "");
    assert_eq!(node_runs(&t), [format!("{} --version", good.display())]);
}

#[test]
fn a_directory_twice_on_path_asks_its_node_once() {
    let Some((mut t, root)) = without_system_node() else { return };
    let old = fake_node(&t, "a", "v16.20.2");
    on_path(&mut t, &[&old, &old]);
    let e = t.run(print_args(&root)).fails_with(1).stderr();
    assert_eq!(e.matches(&old.display().to_string()).count(), 1, "named once: {e}");
    assert_eq!(node_runs(&t).len(), 1, "{:?}", node_runs(&t));
}

#[test]
fn only_older_nodes_found_exits_1_naming_each_as_no_node_found_does() {
    let Some((mut t, root)) = without_system_node() else { return };
    let old = fake_node(&t, "a", "v18.19.0");
    let older = fake_node(&t, "b", "v16.20.2");
    on_path(&mut t, &[&old, &older]);
    let e = t.run(print_args(&root)).fails_with(1).stderr();
    assert_eq!(
        e,
        format!(
            "oyster: error: no `node` found is Node 20 or newer: {} (v18.19.0), {} (v16.20.2)\n\
             hint: install Node 20 or newer (on PATH or in /opt/homebrew/bin, /usr/local/bin, \
             ~/.local/bin, ~/bin), or pass --node-bin /full/path/to/node\n",
            old.display(),
            older.display()
        )
    );
    // None at all: the same exit code.
    on_path(&mut t, &[]);
    t.run(print_args(&root)).fails_with(1).stderr_has_all(&["no `node` was found on PATH"]);
}

#[test]
fn a_node_the_user_named_that_is_too_old_or_missing_exits_2_by_flag_or_variable() {
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    let old = fake_node(&t, "a", "v18.19.0");
    let good = fake_node(&t, "c", "v22.1.0");
    // A good node on PATH changes nothing: what the user named is never silently replaced.
    on_path(&mut t, &[&good]);
    let missing = t.path("nowhere/node");
    for bad in [&old, &missing] {
        let mut args = print_args(&root);
        args.extend(["--node-bin".into(), bad.display().to_string()]);
        t.run(&args)
            .fails_with(2)
            .stderr_has_all(&[&format!("node from --node-bin ({})", bad.display())]);

        t.extra_env = vec![("OYSTERUN_NODE_BIN".into(), bad.display().to_string())];
        t.run(print_args(&root))
            .fails_with(2)
            .stderr_has_all(&[&format!("node from OYSTERUN_NODE_BIN ({})", bad.display())]);
        t.extra_env.clear();
    }
    assert!(
        !node_runs(&t).iter().any(|l| l.starts_with(&good.display().to_string())),
        "the node on PATH was run: {:?}",
        node_runs(&t)
    );
}

#[test]
fn a_root_not_found_exits_1_as_no_node_found_does_and_a_root_the_user_named_exits_2() {
    let mut t = TestContext::new();
    // The pinned Node's prefix (the test dir) holds no lib/node_modules/oysterun.
    let good = fake_node(&t, "c/bin", "v22.1.0");
    on_path(&mut t, &[&good]);
    let e = t.run(["agent", "print"]).fails_with(1).stderr();
    assert!(e.starts_with("oyster: error: could not find the Oysterun install root"), "{e}");
    has_all(&e, &["\nhint: install Oysterun with `npm install -g oysterun`"]);
    // The same through install (with the simulator's launchd), which changes nothing.
    t.use_sim();
    let e = t.run(args(&["install", "ghost"]).port(common::free_port())).fails_with(1).stderr();
    has_all(&e, &["could not find the Oysterun install root"]);
    assert!(!t.home.join(".oysterun-stacks/ghost").exists(), "{e}");

    let missing = t.path("no-oysterun");
    t.run(args(&["agent", "print"]).root(&missing))
        .fails_with(2)
        .stderr_has_all(&["the Oysterun root from --root"]);
    t.extra_env = vec![("OYSTERUN_ROOT".into(), missing.display().to_string())];
    t.run(["agent", "print"])
        .fails_with(2)
        .stderr_has_all(&["the Oysterun root from OYSTERUN_ROOT"]);
}

#[test]
fn an_installed_pin_now_too_old_is_passed_over_once_and_the_search_goes_on() {
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    let pinned_node = fake_node(&t, "a", "v22.1.0");
    let newer = fake_node(&t, "b", "v24.0.0");
    // The plist as installed, pinning a (what `agent print` shows is what install writes).
    let mut args = print_args(&root);
    args.extend(["--node-bin".into(), pinned_node.display().to_string()]);
    let plist = t.run(&args).ok().stdout();
    let agents = t.home.join("Library/LaunchAgents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("com.oysterun.host.plist"), plist).unwrap();
    // The Node at that path is replaced by an old one; it is also first on PATH.
    fake_node(&t, "a", "v18.19.0");
    std::fs::remove_file(t.path("node-runs.log")).unwrap();
    on_path(&mut t, &[&pinned_node, &newer]);

    let r = t.run(print_args(&root)).ok();
    assert_eq!(pinned(&r.stdout()), newer.display().to_string());
    let a = pinned_node.display();
    assert_eq!(
        r.stderr(),
        format!(
            "oyster: note: node from the installed LaunchAgent ({a}) is v18.19.0; the Host needs \
             Node 20 or newer. Install a newer Node or pass --node-bin; resolving node again\n\
             oyster: note: using node {} (v24.0.0), the first found that is Node 20 or newer; \
             passed over {a} (v18.19.0)\n",
            newer.display()
        )
    );
    assert_eq!(node_runs(&t), [format!("{a} --version"), format!("{} --version", newer.display())]);
}
