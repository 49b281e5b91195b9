//! The words of `fleet/`: oyster's own signature, the profile's organization, the inventory's
//! fixes.

use std::fmt::{self, Display, Formatter};

use crate::fleet::inventory::Fix;
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

/// `oyster VERB` for `stack`, as a user types it.
fn cmd(stack: &str, verb: &str) -> String {
    if stack == crate::host::stack::DEFAULT_STACK {
        format!("oyster {verb}")
    } else {
        format!("oyster {verb} {stack}")
    }
}

/// ` --stack NAME`, or nothing for the default stack.
fn stack_flag(stack: &str) -> String {
    if stack == crate::host::stack::DEFAULT_STACK {
        String::new()
    } else {
        format!(" --stack {stack}")
    }
}

impl Display for Fix {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Fix::LaunchdUnreadable => f.write_str(
                "each stack was asked on its own; run `oyster doctor` to see what launchctl says",
            ),
            Fix::ProfilesNeedRoot => f.write_str(
                "only root can list the device's profiles (run: sudo oyster inventory)",
            ),
            Fix::AccountsUnlisted => f.write_str(
                "only the console user and root were looked at; each user can run `oyster inventory --json` themselves",
            ),
            Fix::AsUser { user } => {
                write!(f, "run `oyster inventory` as {user} for the details")
            }
            Fix::DoctorDetails { stack } => write!(
                f,
                "run `{}` for the details and the fix",
                cmd(stack, "doctor")
            ),
            Fix::DoctorForIt { stack } => write!(f, "run `{}` for the fix", cmd(stack, "doctor")),
            Fix::Doctor { stack } => write!(f, "run `{}`", cmd(stack, "doctor")),
            Fix::DoctorLaunchctl { stack } => write!(
                f,
                "run `{}` to see what launchctl says",
                cmd(stack, "doctor")
            ),
            Fix::Verb { stack, verb } => f.write_str(&cmd(stack, verb)),
            Fix::CrashLoop { stack } => write!(
                f,
                "read `{}`, fix the cause, then `{}`",
                cmd(stack, "logs"),
                cmd(stack, "restart")
            ),
            Fix::InstallProvider { name, id, stack } => write!(
                f,
                "install {name} (`oyster providers status{flag}` says where oyster looked), or \
                 disable it: oyster providers set {id} \"\"{flag}",
                flag = stack_flag(stack)
            ),
            Fix::Regenerate { stack } => {
                if stack == crate::host::stack::DEFAULT_STACK {
                    f.write_str("oyster agent regenerate")
                } else {
                    write!(f, "oyster agent regenerate --stack {stack}")
                }
            }
            Fix::RegenerateNode { stack } => write!(
                f,
                "oyster agent regenerate{} --node-bin <a Node 20 or later>",
                stack_flag(stack)
            ),
            Fix::RegenerateRoot { stack } => write!(
                f,
                "oyster agent regenerate{} --root <your Oysterun install>",
                stack_flag(stack)
            ),
        }
    }
}
