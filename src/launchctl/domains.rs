//! The per-user domains as one label is seen in them: `gui/<uid>` and `user/<uid>`, which of
//! them a Host belongs in (a missing GUI domain, or a console that is not this user's), and
//! what is true of a Host that falls back to `user/<uid>`.

use std::path::Path;

use super::{Code, Domain, PrintInfo};

/// What is true of a Host in `user/<uid>`, said whenever oyster falls back to it.
pub fn user_domain_note(gui: Domain, code: Code) -> String {
    UserDomain {
        gui,
        why: NoGui::Code(code),
    }
    .to_string()
}

/// A Host going to `user/<uid>` instead of `gui` (`why`). Words: `commands/words/launchctl.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserDomain {
    pub gui: Domain,
    pub why: NoGui,
}

/// Why `gui/<uid>` cannot take this user's Host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoGui {
    /// launchctl answered this code: no such domain.
    Code(Code),
    /// The console is `owner`'s (0: nobody at it), not this user's; `overridden` when
    /// [`CONSOLE_VAR`] said so.
    NotMine { owner: u32, overridden: bool },
}

/// Who owns the console, as Homebrew asks it (`File.stat("/dev/console").uid`): on macOS the
/// owner of `/dev/console` (root while nobody is logged in at the screen), or
/// `OYSTER_CONSOLE_UID` when set (said wherever it decides something); elsewhere unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Console {
    pub owner: Option<u32>,
    /// Taken from `OYSTER_CONSOLE_UID`, not from `/dev/console`.
    pub overridden: bool,
}

/// The variable that says who owns the console instead of `/dev/console` (tests, Linux).
pub const CONSOLE_VAR: &str = "OYSTER_CONSOLE_UID";

impl Console {
    /// `/dev/console`'s owner on macOS; unknown elsewhere (Linux has no Aqua session to find).
    pub fn of_this_machine() -> Console {
        Console {
            owner: if cfg!(target_os = "macos") {
                crate::sys::user::owner_of(Path::new("/dev/console"))
            } else {
                None
            },
            overridden: false,
        }
    }

    /// Why `gui/<uid>` cannot load this user's Host, when the console is someone else's.
    fn not_mine(self, gui: Domain) -> Option<NoGui> {
        let Domain::Gui(me) = gui else { return None };
        let owner = self.owner.filter(|o| *o != me)?;
        Some(NoGui::NotMine {
            owner,
            overridden: self.overridden,
        })
    }
}

/// One label as `print` sees it in `gui/<uid>` and in `user/<uid>`: the job, or the code that
/// said it is not there (113 not loaded; 112/125 no such domain).
#[derive(Debug, Clone)]
pub struct BothDomains {
    pub gui: Result<PrintInfo, Code>,
    pub user: Result<PrintInfo, Code>,
}

impl BothDomains {
    /// Every domain the label is loaded in, `gui/<uid>` first.
    pub fn loaded(&self) -> Vec<(Domain, &PrintInfo)> {
        [(Domain::gui(), &self.gui), (Domain::user(), &self.user)]
            .into_iter()
            .filter_map(|(d, r)| r.as_ref().ok().map(|i| (d, i)))
            .collect()
    }

    /// The domain this user's Host belongs in, as these two answers show it: `gui/<uid>`, or
    /// `user/<uid>` (with the note saying what that means) when `gui/<uid>` does not exist. The
    /// same choice as [`Launchctl::domain`], without another launchctl start, and knowing who
    /// owns the console (issue 39 item 4): over SSH with nobody, or another user, at the
    /// console, `gui/<uid>` may still answer `print` while a bootstrap there answers a bare 5
    /// (psimaker/vaultsync#89, Homebrew/homebrew-services#528), so a Host not loaded there goes
    /// to `user/<uid>`, said, as Homebrew does. A job loaded in `gui/<uid>` proves that domain
    /// works: it stays.
    pub fn choice_at(&self, console: Console) -> DomainChoice {
        let gui = Domain::gui();
        if let Some(code) = self.gui_missing() {
            return DomainChoice {
                name: gui.other(),
                fallback_note: Some(user_domain_note(gui, code)),
            };
        }
        match console.not_mine(gui).filter(|_| self.gui.is_err()) {
            Some(why) => DomainChoice {
                name: gui.other(),
                fallback_note: Some(UserDomain { gui, why }.to_string()),
            },
            None => DomainChoice {
                name: gui,
                fallback_note: None,
            },
        }
    }

    /// The code that said `gui/<uid>` does not exist (no console session), if one did.
    pub fn gui_missing(&self) -> Option<Code> {
        match self.gui {
            Err(c) if c.domain_missing() => Some(c),
            _ => None,
        }
    }
}

/// The launchd domain chosen for this user, and the note when it is the fallback.
#[derive(Debug, Clone)]
pub struct DomainChoice {
    pub name: Domain,
    /// Set when oyster fell back from `gui/<uid>`.
    pub fallback_note: Option<String>,
}

impl DomainChoice {
    #[allow(dead_code)]
    pub fn target(&self, label: &str) -> String {
        self.name.target(label)
    }
}
