//! Login Items (macOS 13+): every LaunchAgent appears in System Settings → General → Login
//! Items under "Allow in the Background", and one the user switched off there (or never
//! approved) cannot be loaded: `bootstrap` answers a bare 5 and `enable` does not undo it
//! (docs/launchd.md, "Verbs"). This is the one seam that asks for that state.
//!
//! # Platform
//! On macOS, with the system launchctl, ServiceManagement's
//! `SMAppService.statusForLegacyPlist(at:)` (`statusForLegacyURL:`, macOS 13+; no entitlement
//! needed) answers for the installed plist. Elsewhere, and whenever `$OYSTER_LAUNCHCTL` points
//! oyster at another launchctl, that program is asked with the simulator's own verb
//! `login-item-status PLIST` (launchd/README.md); a program that does not know it leaves the
//! state unknown. The state is **unknown, never "fine"**, where the API is missing (macOS 12)
//! or fails.

use std::path::Path;

use crate::launchctl::Launchctl;

/// What ServiceManagement says of the plist (`SMAppService.Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoginItem {
    /// Allowed to run in the background.
    Enabled,
    /// Switched off in System Settings → General → Login Items, or not approved yet.
    RequiresApproval,
    /// Not known to Login Items (never loaded since it was written).
    NotRegistered,
    /// ServiceManagement could not find the plist.
    NotFound,
    /// Not known: the API is missing (before macOS 13) or failed; a note says why.
    Unknown,
}

impl LoginItem {
    /// The state in words for humans.
    pub fn words(self) -> &'static str {
        match self {
            LoginItem::Enabled => "allowed",
            LoginItem::RequiresApproval => "switched off (requires approval)",
            LoginItem::NotRegistered => "not registered yet",
            LoginItem::NotFound => "not found by ServiceManagement",
            LoginItem::Unknown => "unknown",
        }
    }
}

/// The Login Items state of `plist`, or why it is unknown.
pub fn status(lc: &Launchctl, plist: &Path) -> Result<LoginItem, String> {
    #[cfg(target_os = "macos")]
    if !lc.overridden {
        return service_management::status(plist);
    }
    through_launchctl(lc, plist)
}

/// Where to switch it on, naming the item as System Settings lists it: after the program the
/// agent runs (`oyster`), or after the developer who signed that program.
/// How [`fix`] ends: for a command that launchd refused (not for a note on a loaded job).
pub const THEN_AGAIN: &str = "; then run the command again";

pub fn fix(program: &str) -> String {
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| "oyster".to_owned(), |n| n.to_string_lossy().into_owned());
    format!(
        "open System Settings → General → Login Items, and under \"Allow in the Background\" switch on \"{name}\" (the item is named after the program the agent runs, {program}, or after the developer who signed it){THEN_AGAIN}"
    )
}

/// `$OYSTER_LAUNCHCTL login-item-status PLIST`: one word on stdout (the simulator's verb).
fn through_launchctl(lc: &Launchctl, plist: &Path) -> Result<LoginItem, String> {
    let f = lc
        .call::<std::ffi::OsStr>(&["login-item-status".as_ref(), plist.as_os_str()])
        .map_err(|e| e.to_string())?;
    if f.code != 0 {
        return Err(format!(
            "{} cannot say (`login-item-status` exited {}{})",
            lc.path.display(),
            f.code,
            f.stderr
                .lines()
                .next()
                .map_or(String::new(), |l| format!(": {}", l.trim()))
        ));
    }
    match f.stdout.trim() {
        "enabled" => Ok(LoginItem::Enabled),
        "requires approval" => Ok(LoginItem::RequiresApproval),
        "not registered" => Ok(LoginItem::NotRegistered),
        "not found" => Ok(LoginItem::NotFound),
        other => Err(format!(
            "{} answered {other:?} for the Login Items status",
            lc.path.display()
        )),
    }
}

#[cfg(target_os = "macos")]
mod service_management {
    use std::path::Path;

    use objc2_foundation::NSURL;
    use objc2_service_management::{SMAppService, SMAppServiceStatus};

    use super::LoginItem;

    pub fn status(plist: &Path) -> Result<LoginItem, String> {
        if !objc2::available!(macos = 13.0) {
            return Err(
                "Login Items exist from macOS 13, and ServiceManagement cannot be asked before it"
                    .to_owned(),
            );
        }
        let url = NSURL::from_file_path(plist)
            .ok_or_else(|| format!("{} cannot be made a file URL", plist.display()))?;
        #[allow(unsafe_code)]
        // SAFETY: `statusForLegacyURL:` is a class method of SMAppService that exists from
        // macOS 13 (checked just above); it takes a file URL, here a valid retained NSURL that
        // outlives the call, and returns an NSInteger. It has no other precondition.
        let answer = unsafe { SMAppService::statusForLegacyURL(&url) };
        Ok(match answer {
            SMAppServiceStatus::Enabled => LoginItem::Enabled,
            SMAppServiceStatus::RequiresApproval => LoginItem::RequiresApproval,
            SMAppServiceStatus::NotRegistered => LoginItem::NotRegistered,
            SMAppServiceStatus::NotFound => LoginItem::NotFound,
            other => return Err(format!("ServiceManagement answered status {}", other.0)),
        })
    }
}
