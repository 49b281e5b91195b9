//! The `.pkg` postinstall, run on Linux against the recording fakes of `common::pkg`: it finds
//! the console user and their home, and installs or regenerates their agent as them in their
//! GUI session; every way it cannot leaves the install succeeding with the command to run.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::common::pkg::{assert_oyster_never_acts_as_root, w, Pkg};
use crate::common::repo::VERSION;

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
    // The user's plist is read as the user, never by root.
    want.push(format!(
        "sudo -u alice -H {} -extract EnvironmentVariables.OYSTERUN_NODE_BIN raw -o - {} as=root",
        w(&p.sys.join("usr/bin/plutil")),
        w(&plist)
    ));
    want.push(format!(
        "plutil -extract EnvironmentVariables.OYSTERUN_NODE_BIN raw -o - {} as=alice",
        w(&plist)
    ));
    want.extend(p.agent_calls("alice", "regenerate", &format!(" --node-bin {}", w(&pinned))));
    assert_eq!(o.calls, want);
    assert_oyster_never_acts_as_root(&o);

    // Another stack's agent is named, with the command for it, but left to its owner.
    std::fs::write(p.agents_dir("alice").join("com.oysterun.host.staging.plist"), "x").unwrap();
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&["also has the stack 'staging'", "oyster agent regenerate --stack staging"]);
    assert!(!o.oyster_calls().iter().any(|c| c.contains("--stack")), "{:#?}", o.calls);

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
        &format!("oyster agent regenerate as=alice home={}", w(&p.home("alice")))
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
    o.exits_0_saying(&["done: oyster agent regenerate", &format!("(home {})", home.display())]);
    assert_eq!(
        o.oyster_calls()[1..],
        [
            format!("oyster agent print --node-bin {} as=asmith home={}", w(&pinned), w(&home)),
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
    assert!(!o.calls.iter().any(|c| c.starts_with("launchctl")), "{:#?}", o.calls);
    assert!(o.oyster_calls().last().unwrap().starts_with("oyster agent print "));

    // On an upgrade, the hint is the regenerate the user can run once the root is back.
    let pinned = p.brew_node();
    p.install_agent("alice", &pinned);
    let o = p.run(Some("alice"), &[("FAKE_PRINT_ERROR", err)]);
    o.exits_0_saying(&[
        &format!("oyster cannot set up the agent for alice yet: oyster: {err}"),
        "run as alice (in Terminal, without sudo): oyster agent regenerate --root <your Oysterun install>",
    ]);
    assert!(!o.calls.iter().any(|c| c.starts_with("launchctl")), "{:#?}", o.calls);
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
    assert_eq!(o.oyster_calls(), ["oyster --version as=root home=/var/root"]);
    assert!(!o.calls.iter().any(|c| c.starts_with("sudo") || c.starts_with("launchctl")));

    // Intel Homebrew and the nodejs.org installer put Node in /usr/local/bin.
    let intel = p.node_at(&p.sys.join("usr/local/bin/node"));
    let o = p.run(Some("alice"), &[]);
    o.exits_0_saying(&["done: oyster agent install"]);
    assert!(o
        .oyster_calls()
        .last()
        .unwrap()
        .starts_with(&format!("oyster agent install --node-bin {} as=alice", w(&intel))));
}

#[test]
fn postinstall_with_nobody_logged_in_does_nothing_and_says_why() {
    let p = Pkg::new();
    for console in [Some("root"), Some("loginwindow"), Some("_mbsetupuser"), Some(""), None] {
        let o = p.run(console, &[]);
        o.exits_0_saying(&[
            "nobody is logged in",
            "'oyster agent regenerate' after an upgrade",
            "'oyster setup --root <your Oysterun install>' the first time",
        ]);
        assert_eq!(
            o.calls,
            ["oyster --version as=root home=/var/root", "stat -f%Su /dev/console as=root"],
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
    assert!(!o.oyster_calls().iter().any(|c| c.contains("agent regenerate")));
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
    assert!(o.calls.last().unwrap().starts_with("oyster agent install --node-bin "));
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
    assert!(o.out.contains("BROKEN PAYLOAD") && o.out.contains("not executable"), "{}", o.out);
    assert!(o.calls.is_empty(), "{:#?}", o.calls);
    // Does not run (a wrong architecture, a truncated file).
    p.write_oyster("echo 'Bad CPU type in executable' >&2; exit 126\n");
    let o = p.run(Some("alice"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains("BROKEN PAYLOAD") && o.out.contains("Bad CPU type"), "{}", o.out);
    // Missing.
    std::fs::remove_file(p.oyster()).unwrap();
    let o = p.run(Some("alice"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains("BROKEN PAYLOAD"), "{}", o.out);
    assert!(o.calls.is_empty(), "{:#?}", o.calls);
    let _ = &p.t;
}
