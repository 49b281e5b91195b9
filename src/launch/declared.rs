//! The declared variables at launch (docs/behaviour.md "Declared environment"): read once,
//! learned as secrets (all but the settings, `environment::SETTINGS`) before anything is logged, logged by name only, recorded in the exec
//! record by fingerprint, and added to the Host's environment at the exec.

use std::os::unix::process::CommandExt;
use std::path::Path;

use super::Log;
use crate::context::Context;
use crate::host::declared::{self, Declared};
use crate::host::identity::ExecRecord;
use crate::host::stack::Stack;

/// The declared variables of the launch stack: its own file, the organization's forced ones
/// over it. Every value becomes a secret of this run before anything is logged.
pub(super) fn for_launch(ctx: &Context, stack: &Stack) -> Declared {
    let d = declared::effective(stack, &crate::host::plan::managed(ctx));
    ctx.out
        .add_secrets(crate::config::environment::secrets(&d.vars));
    d
}

/// Why a declared variable (or the whole file) is left out, in the Host log.
pub(super) fn log_problems(d: &Declared, log: &Log) {
    for p in d.problems() {
        log.line(&p);
    }
}

/// The record says which declared variables the Host got, by fingerprint; the environment it
/// records is the one the launch program was given, without a declared name's value.
pub(super) fn record(rec: &mut ExecRecord, d: &Declared) {
    for name in d.vars.keys() {
        rec.env.remove(name);
    }
    rec.declared = d.fingerprints();
}

/// The launch summary's part about them: names only.
pub(super) fn summary(d: &Declared) -> String {
    match d.vars.len() {
        0 => "no declared variables".to_owned(),
        n => format!("{n} declared variable(s) added ({})", d.names().join(", ")),
    }
}

/// `execve`s `node server` with this process's environment and the declared variables over it;
/// returns only the error of an exec that failed.
pub(super) fn exec(node: &Path, server: &Path, d: &Declared) -> std::io::Error {
    std::process::Command::new(node)
        .arg(server)
        .envs(&d.vars)
        .exec()
}
