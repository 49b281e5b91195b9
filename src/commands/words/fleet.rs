//! The words of `fleet/`: oyster's own signature, the profile's organization, the inventory's
//! fixed notes.

use std::fmt::{self, Display, Formatter};

use crate::fleet::inventory::Note;
use crate::fleet::profile::BadOrganization;
use crate::fleet::signature::About;

impl Display for About {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            About::Unsigned => write!(f, "the binary is not signed"),
            About::Unreadable { code, stderr } => {
                write!(f, "codesign could not read it (exit {code}): {stderr}")
            }
            About::NotRun { why } => write!(f, "codesign could not be run: {why}"),
            About::NotMacos => write!(
                f,
                "this build is not for macOS, so it has no code signature"
            ),
            About::AdHoc => write!(
                f,
                "the binary is ad-hoc signed (a local or Homebrew build), with no team"
            ),
            About::NoAuthority => write!(f, "the signature names no authority"),
            About::SignedBy {
                leaf,
                developer_id: true,
            } => write!(f, "signed by {leaf}"),
            About::SignedBy { leaf, .. } => {
                write!(f, "signed by {leaf}, which is not a Developer ID")
            }
        }
    }
}

impl Display for BadOrganization {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            BadOrganization::Empty => write!(f, "--organization is empty"),
            BadOrganization::TooLong => {
                write!(f, "--organization is longer than 200 characters")
            }
            BadOrganization::Control(c) => write!(
                f,
                "--organization holds the control character {c:?}, which a profile cannot carry"
            ),
            BadOrganization::NotXml(c) => write!(
                f,
                "--organization holds U+{:04X}, which XML 1.0 cannot carry, so the profile would not be XML",
                *c as u32
            ),
        }
    }
}

impl Display for Note {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Note::LaunchdUnreadable => {
                "each stack was asked on its own; run `oyster doctor` to see what launchctl says"
            }
            Note::ProfilesNeedRoot => {
                "only root can list the device's profiles (run: sudo oyster inventory)"
            }
            Note::AccountsUnlisted => {
                "only the console user and root were looked at; each user can run `oyster inventory --json` themselves"
            }
        })
    }
}
