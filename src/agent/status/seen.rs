//! What one read saw beside the facts `agent status --json` prints, kept for `doctor`'s rows
//! (never in the JSON): launchd's own answers behind those facts, and the probe itself.

use crate::agent::refusal::Found;
use crate::launchctl::LastExit;
use crate::probe::Probe;

#[derive(Debug, Default)]
pub struct Seen {
    /// Why launchctl could not be asked about the job (then nothing below was seen).
    pub launchctl_failed: Option<String>,
    /// Why the job belongs in `user/<uid>`, when the domain fell back from `gui/<uid>`.
    pub domain_note: Option<String>,
    /// ServiceManagement's own number for `login_item`, when it answered one.
    pub login_item_raw: Option<isize>,
    /// The Login Items switch found off, naming the item.
    pub switched_off: Option<Found>,
    /// How the shown job's last instance ended, as launchd says it.
    pub last_exit: Option<LastExit>,
    /// launchd's count of the shown job's crashes in a row, while it is throttled.
    pub crashes: Option<u32>,
    /// The probe of the running Host.
    pub probe: Option<Probe>,
    /// The pids the manager has for the stack: every loaded launchd copy's, or the unit's
    /// `MainPID` (a port they hold is the stack's own).
    pub manager_pids: Vec<u32>,
}
