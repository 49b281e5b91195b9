//! The domain-wide listings: `print gui/<uid>` (the domain block with its `services = {` table
//! and `disabled services = {`), and the legacy `launchctl list` (`PID\tStatus\tLabel`). One
//! call describes every job of a domain, so a caller need not `print` each job.

use std::collections::BTreeMap;

use crate::proto::Domain;

/// One job as the listings show it.
pub struct Row {
    /// The pid launchd shows (a process it still counts as running may be gone already).
    pub pid: Option<u32>,
    /// The last exit status: `None` before the first exit, the code, or minus the signal.
    pub status: Option<i32>,
    pub label: String,
}

/// The audit session of the console login (also printed by a job's `print`).
const HANDLE: u32 = 100057;

/// `print gui/<uid>`: the domain's header, then `services = {` with one row per job, `pid`
/// right-aligned in 8 columns (0 when not running), the last exit status right-aligned in 6
/// (`-` before any exit) and the label after 5 spaces, as in Alkenso/sLaunchctl's capture of a
/// domain print; then the domain's `disabled services = {` block, as that capture has it.
/// `extra_rows` (the `LAUNCHD_SIM_DOMAIN_EXTRA_ROWS` knob, one row per line) are printed
/// verbatim after the jobs' rows, two tabs in: the rows of Apple's jobs a real domain holds,
/// in whatever shape a test needs.
pub fn domain_print(
    d: &Domain,
    rows: &[Row],
    overrides: Option<&BTreeMap<String, bool>>,
    extra_rows: Option<&str>,
) -> String {
    let active = rows.iter().filter(|r| r.pid.is_some()).count();
    let mut o = format!("{} = {{\n", d.name());
    if d.kind == "gui" {
        o += &format!("\ttype = login\n\thandle = {HANDLE}\n");
    } else {
        o += &format!("\ttype = user\n\thandle = {}\n", d.uid);
    }
    o += &format!(
        "\tactive count = {active}\n\tservice count = {}\n\tactive service count = {active}\n",
        rows.len()
    );
    if d.kind == "gui" {
        o += "\tcreator = loginwindow[415]\n\tcreator euid = 0\n";
    }
    o += "\n\tservices = {\n";
    for r in rows {
        let status = r.status.map_or("-".to_owned(), |s| s.to_string());
        o += &format!(
            "\t\t{:>8} {status:>6}     {}\n",
            r.pid.unwrap_or(0),
            r.label
        );
    }
    for row in extra_rows.into_iter().flat_map(str::lines) {
        o += &format!("\t\t{row}\n");
    }
    o += "\t}\n\n\tdisabled services = {\n";
    for (label, disabled) in overrides.into_iter().flatten() {
        let word = if *disabled { "disabled" } else { "enabled" };
        o += &format!("\t\t\"{label}\" => {word}\n");
    }
    o += "\t}\n}\n";
    o
}

/// The legacy `launchctl list`: a `PID\tStatus\tLabel` header, then one tab-separated row per
/// job: the pid or `-`, the last exit status (minus the signal after a signal death, launchctl(1);
/// 0 before any exit), the label.
pub fn list(rows: &[Row]) -> String {
    let mut o = String::from("PID\tStatus\tLabel\n");
    for r in rows {
        let pid = r.pid.map_or("-".to_owned(), |p| p.to_string());
        o += &format!("{pid}\t{}\t{}\n", r.status.unwrap_or(0), r.label);
    }
    o
}
