//! Real Macs, round 3 (issue 29): what launchd prints that oyster did not expect, what the
//! user switched off, and what launchd refused — against the simulator, each in a shape a
//! real Mac shows (docs/launchd.md gives the source for each).

use std::path::{Path, PathBuf};

use crate::common::{Run, Stack};

fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// A third-party agent plist (not oyster's) with `label`, written under the test's own
/// directory, that launchd loads without running anything.
fn foreign_plist(s: &Stack, label: &str) -> PathBuf {
    let path =
        s.t.path(&format!("{}.plist", label.replace(['/', ' '], "_")));
    let text = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\"><dict><key>Label</key><string>{label}</string><key>ProgramArguments</key><array><string>/bin/sleep</string><string>60</string></array></dict></plist>\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn run_with(s: &Stack, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut c = s.t.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    Run(c.args(args).output().unwrap())
}

fn done(s: &Stack) {
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

fn bootstrap_foreign(s: &Stack, plist: &Path) {
    s.t.sim(&[
        "bootstrap",
        &format!("gui/{}", uid()),
        plist.to_str().unwrap(),
    ])
    .ok();
}

/// 29.7: a label with spaces (any string a third-party plist gives), Apple's
/// `UIKitApplication:…[704b][rb-legacy]` rows and a row that parses as nothing at all: `list`
/// still reads the domain listing (one `print` per domain) and reports the stack from it. On
/// the old parser one such row made the whole listing unreadable and `list` asked per stack.
#[test]
fn list_reads_a_domain_listing_with_rows_it_did_not_expect() {
    let s = Stack::new("rows");
    s.t.run(s.args("install")).ok();
    let agent = foreign_plist(&s, "com.example.my agent");
    bootstrap_foreign(&s, &agent);
    let rows = "     704      -     UIKitApplication:com.apple.Preferences[704b][rb-legacy]\n\
                ???\n\
                       0      -\t";
    let run = run_with(
        &s,
        &[("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS", rows)],
        &["list", "--json"],
    )
    .ok();
    let list = run.json();
    let row = &list["stacks"][0];
    assert!(
        !row["notes"].to_string().contains("could not be used"),
        "one odd row rejected the whole listing: {list}"
    );
    assert_eq!(row["stack"], "rows", "{list}");
    assert_eq!(row["summary"], "verified", "{list}");
    // Counted, said once: 2 rows (`???` and a row with no label) in each domain's listing.
    assert!(
        run.stderr().contains("4 rows of launchd's domain listings"),
        "{}",
        run.stderr()
    );
    // A row that does not parse but names the stack's label: the table cannot say whether the
    // job is there, so that stack is asked for on its own, and still reported right.
    let label = format!("com.oysterun.host.{}", s.name);
    let odd = format!("??? {label} ???");
    let list = run_with(
        &s,
        &[("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS", &odd)],
        &["list", "--json"],
    )
    .ok()
    .json();
    assert_eq!(list["stacks"][0]["summary"], "verified", "{list}");
    s.t.sim(&["bootout", &format!("gui/{}/com.example.my agent", uid())])
        .ok();
    done(&s);
}
