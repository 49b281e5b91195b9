//! Signals, through `nix`: sending them only to a checked pid (never ≤ 0, which would reach a
//! process group or every process), and catching SIGINT/SIGTERM/SIGHUP as a flag that long
//! waits poll, so an interrupted run can roll back before it exits (docs/behaviour.md §9).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use nix::errno::Errno;
pub use nix::sys::signal::Signal;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet};
use nix::unistd::Pid;

/// A pid oyster may signal: positive and within `pid_t`. `None` for anything else (0 or a
/// value that would cast to -1 must never reach `kill`).
pub fn checked_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .map(Pid::from_raw)
}

/// Sends `sig` to exactly `pid`.
pub fn kill(pid: u32, sig: Signal) -> Result<(), Errno> {
    let pid = checked_pid(pid).ok_or(Errno::EINVAL)?;
    nix::sys::signal::kill(pid, sig)
}

/// Sends `sig` to the process group led by `pgid`.
pub fn killpg(pgid: u32, sig: Signal) -> Result<(), Errno> {
    let pgid = checked_pid(pgid).ok_or(Errno::EINVAL)?;
    nix::sys::signal::killpg(pgid, sig)
}

/// Whether `pid` is a live process that leads its own process group (its pgid is its pid):
/// only such a process's group is one [`killpg`] with its pid reaches.
pub fn leads_group(pid: u32) -> bool {
    checked_pid(pid).is_some_and(|p| nix::unistd::getpgid(Some(p)) == Ok(p))
}

/// Whether any process (a zombie until it is reaped) is left in the group `pgid`.
pub fn group_exists(pgid: u32) -> bool {
    checked_pid(pgid).is_some_and(|p| nix::sys::signal::killpg(p, None) != Err(Errno::ESRCH))
}

/// Whether a process with this pid exists (a zombie counts until it is reaped).
pub fn exists(pid: u32) -> bool {
    checked_pid(pid).is_some_and(|p| nix::sys::signal::kill(p, None) != Err(Errno::ESRCH))
}

static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// How many [`Suspended`] are alive: while any is, [`received`] answers `None`, whatever
/// signal arrives meanwhile (a second Ctrl-C must not cut a rollback's launchctl call short).
static SUSPENDED: AtomicUsize = AtomicUsize::new(0);

extern "C" fn record(sig: nix::libc::c_int) {
    // Only an atomic store: async-signal-safe.
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// While alive, SIGINT, SIGTERM and SIGHUP only set a flag ([`received`]) instead of killing
/// oyster; blocking reads return `EINTR` (no `SA_RESTART`). Dropping it restores the previous
/// handlers, so commands that do not poll keep the default Ctrl-C, unless a signal came: then
/// they stay until oyster exits by it.
pub struct InterruptGuard {
    previous: Vec<(Signal, nix::libc::sigaction)>,
}

const CAUGHT: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

impl InterruptGuard {
    /// Starts catching the three signals.
    pub fn install() -> InterruptGuard {
        let action = recording();
        let mut previous = vec![];
        for sig in CAUGHT {
            if let Ok(old) = sigaction(sig, Some(&action)) {
                previous.push((sig, old));
            }
        }
        InterruptGuard { previous }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        // A run a signal interrupted ends by it, and says what it left at the edge, after this
        // guard's scope: the handlers stay, so a second Ctrl-C cannot kill oyster between a
        // finished rollback and its report (the exit is 128 + the first signal all the same).
        if RECEIVED.load(Ordering::SeqCst) != 0 {
            self.previous.clear();
            return;
        }
        for (sig, old) in self.previous.drain(..) {
            let _ = sigaction(sig, Some(&old));
        }
    }
}

/// Which of [`CAUGHT`] the live [`ChildWatch`]es took from their default action, and how many
/// watches are alive (the first takes them, the last gives them back).
static WATCH: std::sync::Mutex<(usize, Vec<Signal>)> = std::sync::Mutex::new((0, Vec::new()));

/// While a child of the process door runs in a run that catches no signal (no
/// [`InterruptGuard`]: `status`, `doctor`, `list`), SIGINT, SIGTERM and SIGHUP only set the
/// flag, so the door kills the child's own process group first (Ctrl-C never reaches that
/// group: it is not the terminal's); the last watch dropped gives the signals back their
/// default action and, if one came, raises it again: oyster ends by it as it would have,
/// leaving no child behind (a Login Items query that never answers, a wedged launchctl).
/// Signals a guard catches or the caller ignores are left as they are.
pub struct ChildWatch(());

impl ChildWatch {
    pub fn install() -> ChildWatch {
        let mut w = WATCH
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if w.0 == 0 {
            let action = recording();
            w.1 = CAUGHT
                .into_iter()
                .filter(|sig| current_is_default(*sig))
                .filter(|sig| sigaction(*sig, Some(&action)).is_ok())
                .collect();
        }
        w.0 += 1;
        ChildWatch(())
    }
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        let mut w = WATCH
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        w.0 -= 1;
        if w.0 > 0 {
            return;
        }
        let took = std::mem::take(&mut w.1);
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty()).into();
        for sig in &took {
            let _ = sigaction(*sig, Some(&default));
        }
        let came = Signal::try_from(RECEIVED.load(Ordering::SeqCst)).ok();
        if let Some(sig) = came.filter(|s| took.contains(s)) {
            drop(w);
            // The default action again: oyster ends by the signal, as it would have.
            let _ = nix::sys::signal::raise(sig);
        }
    }
}

/// Whether `sig`'s action is the default one (read without changing it).
fn current_is_default(sig: Signal) -> bool {
    sigaction(sig, None).is_ok_and(|old| old.sa_sigaction == nix::libc::SIG_DFL)
}

/// The action that only records the signal ([`record`]).
fn recording() -> nix::libc::sigaction {
    SigAction::new(
        SigHandler::Handler(record),
        SaFlags::empty(),
        SigSet::empty(),
    )
    .into()
}

/// `sigaction(2)`, the one call of signal handling: with `action`, installs it for `sig`;
/// without, only reads. Returns the action that was there.
fn sigaction(
    sig: Signal,
    action: Option<&nix::libc::sigaction>,
) -> nix::Result<nix::libc::sigaction> {
    let new = action.map_or(std::ptr::null(), std::ptr::from_ref);
    let mut old = std::mem::MaybeUninit::<nix::libc::sigaction>::zeroed();
    #[allow(unsafe_code)]
    // SAFETY: the actions installed are `record` (it only stores to an atomic, which is
    // async-signal-safe), the default one, and an action read back from the kernel, put back
    // as it was; `old` is a zeroed, properly sized and aligned `struct sigaction` that
    // outlives the call, which only writes into it.
    let (rc, old) = unsafe {
        let rc = nix::libc::sigaction(sig as nix::libc::c_int, new, old.as_mut_ptr());
        (rc, old.assume_init())
    };
    Errno::result(rc).map(|_| old)
}

/// The signal caught since the guard was installed, if any (`None` while a [`Suspended`] is
/// alive: the signal is reported once the last one is dropped).
pub fn received() -> Option<Signal> {
    if SUSPENDED.load(Ordering::SeqCst) > 0 {
        return None;
    }
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        n => Signal::try_from(n).ok(),
    }
}

/// The one interruptible wait: sleeps `d` in short steps and wakes for a signal (`Err`: the
/// signal that came, before or during it; a zero `d` only asks). Every poll loop pauses through
/// it between its looks, so none asks for signals on its own.
pub fn pause(d: std::time::Duration) -> Result<(), Signal> {
    const STEP: std::time::Duration = std::time::Duration::from_millis(20);
    let end = std::time::Instant::now() + d;
    loop {
        if let Some(sig) = received() {
            return Err(sig);
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(STEP.min(left));
    }
}

/// What a step that failed while a signal arrived means: `Ok(Some(signal))` — the signal cut
/// it short (a child killed by it, a wait it ended), and the caller finishes what must be
/// finished before saying so; `Ok(None)` for a step that succeeded; the error otherwise.
pub fn cut_short<T, E>(result: Result<T, E>) -> Result<Option<Signal>, E> {
    match result {
        Ok(_) => Ok(None),
        Err(e) => cause(e).map(Some),
    }
}

/// The one question asked of a failure: `Ok(signal)` when a signal came meanwhile (the
/// failure is its doing: a child killed by the interrupt, a wait it ended), else the error.
pub fn cause<E>(failure: E) -> Result<Signal, E> {
    received().ok_or(failure)
}

/// While alive, [`received`] answers `None` (a rollback must run to its end), for the signal
/// caught before and for any that arrives during it; the first of them is reported again once
/// it is dropped.
pub struct Suspended(i32);

impl Suspended {
    pub fn new() -> Suspended {
        SUSPENDED.fetch_add(1, Ordering::SeqCst);
        Suspended(RECEIVED.swap(0, Ordering::SeqCst))
    }
}

impl Default for Suspended {
    fn default() -> Self {
        Suspended::new()
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        let during = RECEIVED.load(Ordering::SeqCst);
        if self.0 != 0 || during != 0 {
            RECEIVED.store(if self.0 != 0 { self.0 } else { during }, Ordering::SeqCst);
        }
        SUSPENDED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The conventional exit code for a run ended by `sig`: 128 + its number (130, 143, 129).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // signals are 1..=31
pub fn exit_code(sig: Signal) -> u8 {
    128u8.saturating_add(sig as i32 as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_that_would_reach_a_group_or_everyone_are_refused() {
        assert!(checked_pid(0).is_none());
        assert!(checked_pid(u32::MAX).is_none(), "would cast to -1");
        assert!(checked_pid(1 << 31).is_none());
        assert_eq!(kill(u32::MAX, Signal::SIGTERM), Err(Errno::EINVAL));
        assert_eq!(checked_pid(42).map(Pid::as_raw), Some(42));
    }

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code(Signal::SIGINT), 130);
        assert_eq!(exit_code(Signal::SIGTERM), 143);
        assert_eq!(exit_code(Signal::SIGHUP), 129);
    }
}
