//! Unit tests of `listing`.

use super::*;

const CAPTURE_SHAPE: &str = "gui/501 = {\n\ttype = login\n\thandle = 100057\n\tactive count = 2\n\n\tservices = {\n\t\t    1076      -     com.oysterun.host\n\t\t       0     78     com.oysterun.host.dev\n\t\t       0     -9     com.apple.x\n\t}\n\n\tdisabled services = {\n\t\t\"com.oysterun.host.dev\" => disabled\n\t\t\"com.apple.y\" => enabled\n\t}\n}\n";

#[test]
fn the_services_table_and_overrides_are_read_row_by_row() {
    let l = parse_domain(CAPTURE_SHAPE).unwrap();
    assert_eq!(
        l.jobs["com.oysterun.host"],
        Listed {
            pid: Some(1076),
            status: None
        }
    );
    assert_eq!(l.jobs["com.oysterun.host.dev"].status, Some(78));
    assert_eq!(l.jobs["com.apple.x"].status, Some(-9));
    assert_eq!(l.disabled.get("com.oysterun.host.dev"), Some(&true));
    assert_eq!(l.disabled.get("com.apple.y"), Some(&false));
}

#[test]
fn an_odd_row_makes_unsure_only_the_label_it_names_as_a_whole() {
    let text = "x = {\n\tservices = {\n\t\t??? com.oysterun.host.dev ???\n\t}\n}\n";
    let listings = Listings {
        gui: Ok(parse_domain(text).unwrap()),
        user: Err(Code::NoDomain),
    };
    assert!(listings.unsure("com.oysterun.host.dev"));
    assert!(
        !listings.unsure("com.oysterun.host"),
        "production's label is a prefix"
    );
    assert!(!listings.unsure("com.oysterun.host.de"));
    assert!(!listings.unsure("oysterun.host.dev"));
}

#[test]
fn a_shape_oyster_does_not_know_is_none_never_a_guess() {
    assert_eq!(parse_domain("gui/501 = {\n\ttype = login\n}\n"), None);
}

#[test]
fn a_row_that_does_not_parse_is_skipped_and_counted_never_the_table() {
    let text = "x = {\n\tservices = {\n\t\tnot a row\n\t\t       0      -     com.a\n\t\t-\t0\n\t}\n\tdisabled services = {\n\t\t\"com.b\" => maybe\n\t\t\"com.c\" => disabled\n\t}\n}\n";
    let l = parse_domain(text).unwrap();
    assert_eq!(l.jobs.keys().collect::<Vec<_>>(), ["com.a"]);
    assert_eq!(l.disabled.get("com.c"), Some(&true));
    assert_eq!(l.skipped, ["not a row", "-\t0", "\"com.b\" => maybe"]);
    let listings = Listings {
        gui: Ok(l),
        user: Err(Code::NoDomain),
    };
    assert_eq!(listings.skipped(), 3);
    assert!(listings.unsure("com.b"));
    assert!(!listings.unsure("com.a"));
}

#[test]
fn a_label_is_the_rest_of_the_row_spaces_brackets_and_tabs_included() {
    // The simulator's column layout, a tab before the label, and labels real domains show.
    let text = "gui/501 = {\n\tservices = {\n\t\t     704      -     UIKitApplication:com.apple.Preferences[704b][rb-legacy]\n\t\t       0      -     com.example.my agent\n\t\t     812     -15 \tcom.example.tabbed label\n\t\t       0      0     com.example.trailing\t\n\t}\n\tdisabled services = {\n\t\t\"com.example.my agent\" => true\n\t\t\"a \\\"=>\\\" b\" => false\n\t}\n}\n";
    let l = parse_domain(text).unwrap();
    assert!(l.skipped.is_empty(), "{:?}", l.skipped);
    assert_eq!(
        l.jobs["UIKitApplication:com.apple.Preferences[704b][rb-legacy]"].pid,
        Some(704)
    );
    assert_eq!(l.jobs["com.example.my agent"].pid, None);
    assert_eq!(l.jobs["com.example.tabbed label"].status, Some(-15));
    assert_eq!(l.jobs["com.example.trailing"].status, Some(0));
    assert_eq!(l.disabled.get("com.example.my agent"), Some(&true));
    assert_eq!(l.disabled.get("a \\\"=>\\\" b"), Some(&false));
}

#[test]
fn a_listed_job_reads_as_print_would_say_it() {
    let l = parse_domain(CAPTURE_SHAPE).unwrap();
    let listings = Listings {
        gui: Ok(l),
        user: Err(Code::NotLoaded),
    };
    let both = listings.both("com.oysterun.host");
    let info = both.gui.unwrap();
    assert!(info.running());
    assert_eq!(info.pid(), Some(1076));
    let dead = listings.both("com.oysterun.host.dev").gui.unwrap();
    assert!(!dead.running());
    assert_eq!(dead.last_exit().and_then(|e| e.code()), Some(78));
    assert_eq!(listings.both("nope").gui.unwrap_err(), Code::NotLoaded);
}

/// The captures docs/launchd.md cites, as they print (tabs restored where the quoting
/// source indented with spaces): Alkenso/sLaunchctl's `print system` (nested blocks,
/// `endpoints` rows that look like service rows, `disabled services` inside the domain),
/// StackOverflow 65772678's `print user/501` rows, and the three `print-disabled` styles.
#[test]
fn every_cited_capture_reads_right() {
    let system = "system = {\n\ttype = system\n\thandle = 0\n\tactive count = 742\n\tservice stats = {\n\t\tcom.apple.launchd.service-stats-default (4096 records)\n\t}\n\tcreator = launchd[1]\n\tsecurity context = {\n\t\tuid unset\n\t\tasid = 0\n\t}\n\n\tsubdomains = {\n\t\tpid/39576\n\t\tuser/0\n\t}\n\n\tservices = {\n\t\t       0      -     com.apple.lskdd\n\t\t     184      -     com.apple.runningboardd\n\t\t       0      -     com.apple.relatived\n\t}\n\n\tunmanaged processes = {\n\t\tcom.apple.xpc.launchd.unmanaged.nsattributedstr.36189 = {\n\t\t\tactive count = 3\n\t\t}\n\t}\n\n\tendpoints = {\n\t\t       0    M   D   com.apple.fpsd.arcadeservice\n\t\t 0x1090b    M   A   com.apple.VirtualDisplay\n\t}\n\n\tdisabled services = {\n\t\t\"com.apple.CSCSupportd\" => disabled\n\t\t\"com.apple.ftpd\" => disabled\n\t}\n\n\tproperties = uncorked | audit check done | bootcache hack\n}\n";
    let l = parse_domain(system).unwrap();
    assert!(l.skipped.is_empty(), "{:?}", l.skipped);
    assert_eq!(
        l.jobs.keys().collect::<Vec<_>>(),
        [
            "com.apple.lskdd",
            "com.apple.relatived",
            "com.apple.runningboardd"
        ]
    );
    assert_eq!(l.jobs["com.apple.runningboardd"].pid, Some(184));
    assert_eq!(l.disabled.len(), 2);
    let user = "user/501 = {\n\tservices = {\n\t\t       0      -     com.apple.accounts.dom\n\t\t     421      -     com.apple.distnoted.xpc.agent\n\t}\n}\n";
    let l = parse_domain(user).unwrap();
    assert_eq!(l.jobs["com.apple.distnoted.xpc.agent"].pid, Some(421));
    assert_eq!(l.jobs["com.apple.accounts.dom"].pid, None);
    // print-disabled: true/false (≤ 12), enabled/disabled (13–25), macOS 26's layout.
    for text in [
        "disabled services = {\n\t\"com.o\" => true\n\t\"com.p\" => false\n}\n",
        "disabled services = {\n\t\"com.o\" => disabled\n\t\"com.p\" => enabled\n}\n",
        "\n\tdisabled services = {\n\t\t\"com.o\" => disabled\n\t\t\"com.p\" => enabled\n\t}\n",
    ] {
        assert_eq!(
            crate::launchctl::print::parse_disabled(text, "com.o"),
            Some(true)
        );
        assert_eq!(
            crate::launchctl::print::parse_disabled(text, "com.p"),
            Some(false)
        );
        assert_eq!(crate::launchctl::print::parse_disabled(text, "com"), None);
    }
}
