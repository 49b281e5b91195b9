//! Unit tests of `print`.

#[test]
fn print_disabled_both_styles() {
    let text = "disabled services = {\n\t\"com.oysterun.host\" => disabled\n\t\"com.oysterun.host.dev\" => enabled\n\t\"x\" => true\n}\n";
    assert_eq!(super::parse_disabled(text, "com.oysterun.host"), Some(true));
    assert_eq!(
        super::parse_disabled(text, "com.oysterun.host.dev"),
        Some(false)
    );
    assert_eq!(super::parse_disabled(text, "x"), Some(true));
    assert_eq!(super::parse_disabled(text, "com.oysterun"), None);
}

use super::*;

const SAMPLE: &str = "gui/501/com.oysterun.host = {\n\tactive count = 1\n\tpath = /Users/u/Library/LaunchAgents/com.oysterun.host.plist\n\ttype = LaunchAgent\n\tstate = running\n\tprogram = /opt/homebrew/bin/node\n\targuments = {\n\t\t/opt/homebrew/bin/node\n\t\t/opt/oysterun/host-service/server.mjs\n\t}\n\tdefault environment = {\n\t\tPATH => /default\n\t\tHOME => /h\n\t}\n\tenvironment = {\n\t\tPATH => /usr/bin\n\t}\n\tendpoints = {\n\t\t\"x\" = {\n\t\t\tstate = waiting\n\t\t\tpid = 9\n\t\t}\n\t}\n\tpid = 1076\n\tlast exit code = (never exited)\n}\n";

#[test]
fn parses_depth_one_only() {
    let p = parse_print(SAMPLE);
    assert_eq!(p.state(), Some("running"));
    assert_eq!(p.pid(), Some(1076));
    assert_eq!(
        p.path(),
        Some(Path::new(
            "/Users/u/Library/LaunchAgents/com.oysterun.host.plist"
        ))
    );
    assert_eq!(p.last_exit(), Some(LastExit::Never));
    assert!(p.running());
    assert_eq!(
        p.environment.get("PATH").map(String::as_str),
        Some("/usr/bin")
    );
    assert_eq!(
        p.environment.len(),
        1,
        "default environment is not the job's"
    );
    assert_eq!(
        p.arguments,
        [
            "/opt/homebrew/bin/node",
            "/opt/oysterun/host-service/server.mjs"
        ]
    );
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(2000)))]

    /// Fuzz: any text parses without panicking.
    #[test]
    fn print_parser_never_panics(text in r"(\PC|\t|\n|\{|\}| = | => ){0,200}") {
        let _ = parse_print(&text);
    }

    /// Generated print output with nested blocks (carrying their own state and pid) yields
    /// exactly the depth-one fields.
    #[test]
    fn depth_one_fields_are_recovered_exactly(
        fields in proptest::collection::btree_map("[a-z][a-z ]{0,10}[a-z]", "[ -~&&[^{}]]{1,20}", 0..8),
        nested in proptest::collection::vec(("[a-z]{1,8}", "[a-z0-9]{1,8}"), 0..4),
    ) {
        let mut text = String::from("gui/501/x = {\n");
        for (i, (k, v)) in fields.iter().enumerate() {
            let v = v.trim();
            if v.is_empty() || v.ends_with('{') { continue; }
            text += &format!("\t{k} = {v}\n");
            if i < nested.len() {
                let (name, val) = &nested[i];
                text += &format!("\t{name}block = {{\n\t\tstate = {val}\n\t\tpid = 1\n\t\tdeeper = {{\n\t\t\tpath = /x\n\t\t}}\n\t}}\n");
            }
        }
        text += "}\n";
        let p = parse_print(&text);
        for (k, v) in &fields {
            let v = v.trim();
            if v.is_empty() || v.ends_with('{') { continue; }
            prop_assert_eq!(p.get(k), Some(v));
        }
        if !fields.contains_key("pid") { prop_assert_eq!(p.pid(), None); }
        if !fields.contains_key("state") { prop_assert_eq!(p.state(), None); }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(1000)))]

    /// Braces, ` = {` and ` => {` inside values (an environment value, a path, an
    /// argument) open no block: the job's pid and state are read whatever the values hold.
    #[test]
    fn values_with_braces_never_open_a_block(
        env_values in proptest::collection::vec(r"[ -~]{0,16}(\{| = \{| => \{|\}|)", 1..5),
        path_tail in r"[ -~]{0,10}(\{| = \{|)",
        arg in r"[ -~]{0,10}(\{| => \{|\}|)",
    ) {
        let mut text = String::from("gui/501/x = {\n\tactive count = 1\n");
        text += &format!("\tpath = /Users/u/{path_tail}\n\targuments = {{\n\t\t/bin/node\n\t\t{arg}\n\t}}\n");
        text += "\tenvironment = {\n";
        for (i, v) in env_values.iter().enumerate() {
            text += &format!("\t\tK{i} => {v}\n");
        }
        text += "\t}\n\n\tstate = running\n\tpid = 4242\n\tresource coalition = {\n\t\tstate = active\n\t}\n}\n";
        let p = parse_print(&text);
        prop_assert_eq!(p.pid(), Some(4242));
        prop_assert_eq!(p.state(), Some("running"));
        prop_assert!(p.running());
        let want_path = format!("/Users/u/{path_tail}");
        prop_assert_eq!(p.get("path"), Some(want_path.as_str()));
        prop_assert_eq!(p.arguments.clone(), vec!["/bin/node".to_owned(), arg.clone()]);
        for (i, v) in env_values.iter().enumerate() {
            prop_assert_eq!(p.environment.get(&format!("K{i}")), Some(v));
        }
    }
}

#[test]
fn nested_state_and_pid_never_leak_up() {
    let text = "x = {\n\tstate = not running\n\tsub = {\n\t\tstate = running\n\t\tpid = 5\n\t}\n\tlast exit code = 78: EX_CONFIG\n}\n";
    let p = parse_print(text);
    assert_eq!(p.state(), Some("not running"));
    assert_eq!(p.pid(), None);
    assert!(!p.running());
    assert_eq!(p.last_exit(), Some(LastExit::Code(78)));
    let killed = parse_print(
        "x = {\n\tstate = not running\n\tlast terminating signal = Killed: 9\n\truns = 3\n}\n",
    );
    assert_eq!(killed.last_exit(), Some(LastExit::Signal(9)));
    assert_eq!(killed.runs(), Some(3));
}
