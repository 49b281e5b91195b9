//! `oyster mdm profile`: the Managed Login Items profile an MDM installs on every Mac, so the
//! Host's LaunchAgents run without the "Background Items Added" alert and cannot be switched
//! off in System Settings (docs/fleet.md).

use std::path::Path;

use crate::context::Context;
use crate::error::Invalid;
use crate::fleet::profile::{self, ProfileInputs};
use crate::fleet::signature;
use crate::ExitStatus;

/// `oyster mdm profile [--output FILE] [--organization NAME]`.
pub fn profile(
    ctx: &Context,
    output: Option<&std::path::Path>,
    organization: Option<&str>,
) -> anyhow::Result<ExitStatus> {
    write_profile(ctx, output, organization)
}

fn write_profile(
    ctx: &Context,
    output: Option<&Path>,
    organization: Option<&str>,
) -> anyhow::Result<ExitStatus> {
    // `--output -` is stdout, as for every Unix tool (not a file named `-`).
    let output = output.filter(|p| *p != Path::new("-"));
    if let Some(org) = organization {
        profile::check_organization(org).map_err(|why| {
            Invalid::new(why.to_string()).hint("give the organization's name as people read it, e.g. --organization \"Example Inc.\"")
        })?;
    }
    if let Some(path) = output {
        check_output(path)?;
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let sig = signature::of(&exe);
    let bytes = profile::to_xml(&ProfileInputs {
        label_prefix: crate::host::stack::BASE_LABEL,
        team_id: sig.team_id.as_deref(),
        organization,
    })
    .map_err(|e| anyhow::anyhow!("could not render the profile: {e}"))?;
    match &sig.team_id {
        Some(team) => ctx.out.note(&format!(
            "the rule matches the label prefix {} signed by team {team} ({})",
            crate::host::stack::BASE_LABEL,
            sig.about
        )),
        None => ctx.out.note(&format!(
            "the rule matches the label prefix {} alone, with no TeamIdentifier: {}; the \
             Developer-ID-signed oyster of the .pkg adds its team",
            crate::host::stack::BASE_LABEL,
            sig.about
        )),
    }
    let install = "install it through your MDM (macOS 13 or later, user-approved MDM, device \
                   scope); macOS refuses it when opened by double-clicking";
    match output {
        None => {
            ctx.out.raw(&bytes);
            ctx.out.note(install);
        }
        Some(path) => {
            crate::sys::fs::replace_atomic(path, &bytes, 0o644).map_err(|e| match e {
                crate::sys::fs::FsError::Io { action, cause, .. } => anyhow::anyhow!(
                    "could not {action} {}: {cause}",
                    crate::output::one_line(path)
                ),
                e => e.into(),
            })?;
            ctx.out.out(&format!(
                "wrote {} (PayloadIdentifier {}, PayloadUUID {})",
                crate::output::one_line(path),
                profile::PROFILE_IDENTIFIER,
                profile::payload_uuid(profile::PROFILE_IDENTIFIER)
            ));
            ctx.out.out(install);
        }
    }
    Ok(ExitStatus::Success)
}

/// The profile goes to a regular file in an existing directory; anything else is refused
/// before anything is written.
fn check_output(path: &Path) -> Result<(), Invalid> {
    // The path the user gave, as one line in every refusal (a newline in it forges none).
    let shown = crate::output::one_line(path);
    let example = "--output ~/Desktop/oysterun-login-items.mobileconfig";
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.is_dir() {
            return Err(Invalid::new(format!("--output {shown} is a directory"))
                .hint(format!("name the file to write, e.g. {example}")));
        }
        if meta.file_type().is_symlink() {
            return Err(Invalid::new(format!(
                "--output {shown} is a symlink; oyster does not write through one"
            ))
            .hint("give the path of the file itself"));
        }
        if let Some(kind) = crate::sys::fs::special_kind(&meta.file_type()) {
            return Err(Invalid::new(format!("--output {shown} is {kind}"))
                .hint(format!("name a regular file, e.g. {example}")));
        }
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Invalid::new(format!(
            "--output {shown}: the directory {} does not exist",
            crate::output::one_line(parent)
        ))
        .hint(format!(
            "create it first, or name a file in an existing directory ({example})"
        )));
    }
    Ok(())
}
