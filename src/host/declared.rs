//! The declared part of the Host's environment (docs/behaviour.md "Declared environment"):
//! what the user declared with `oyster env` (the stack's `oyster-host.env`,
//! [`crate::config::environment`]) and what the organization's profile forces (`environment`,
//! which wins), as one map. The launch program adds it to the generated environment when it
//! execs the Host; the plist and the unit never hold it; every proof expects it.
//!
//! Values are secrets: this module says names, never values.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::environment::{self, Refused};
use crate::config::managed::Managed;
use crate::host::stack::Stack;

/// The variables the launch program adds for a stack, and why any were not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// The user's file ([`path`]).
    pub file: PathBuf,
    /// Name → value: the user's, with the forced ones over them.
    pub vars: BTreeMap<String, String>,
    /// The forced names, with the profile that forces each.
    pub forced: BTreeMap<String, PathBuf>,
    /// Why the user's file is not used at all (the Host starts without it).
    pub refused: Option<Refused>,
    /// Lines of the user's file left out, in words (by line and name).
    pub left_out: Vec<String>,
}

/// What is said about the declared environment. Words: `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclaredNote {
    /// The file is not used at all.
    NotUsed(Refused),
    /// A user's variable `name`, the forced `forced` (from `file`) in another case: left out.
    Shadowed {
        name: String,
        forced: String,
        file: PathBuf,
    },
}

impl Declared {
    pub fn names(&self) -> Vec<String> {
        self.vars.keys().cloned().collect()
    }

    /// What to say about the file, one line each, with its fix (status and doctor notes).
    pub fn problems(&self) -> Vec<String> {
        let mut out = vec![];
        if let Some(r) = &self.refused {
            out.push(DeclaredNote::NotUsed(r.clone()).to_string());
        }
        for l in &self.left_out {
            out.push(format!("{}: {l}", self.file.display()));
        }
        out
    }

    /// A salted fingerprint of each value (the exec record's `declared`): whether the Host got
    /// a value can be told later without any file holding it.
    pub fn fingerprints(&self) -> BTreeMap<String, String> {
        self.vars
            .iter()
            .map(|(k, v)| (k.clone(), crate::sys::digest::fingerprint(v)))
            .collect()
    }
}

/// The stack's file of declared variables.
pub fn path(stack: &Stack) -> PathBuf {
    environment::path_in(&stack.config_dir)
}

/// What the launch program adds for `stack`: its file (when usable), then every variable
/// `managed` forces, over it.
pub fn effective(stack: &Stack, managed: &Managed) -> Declared {
    let file = path(stack);
    let mut d = Declared {
        file: file.clone(),
        ..Declared::default()
    };
    match environment::read(&file) {
        Ok(Some(f)) => {
            d.vars.extend(f.vars);
            d.left_out = f.problems;
        }
        Ok(None) => {}
        Err(r) => d.refused = Some(r),
    }
    // A forced name wins in any case: the user's `https_proxy` beside a forced `HTTPS_PROXY`
    // would be the one curl and Node's proxy agents use (they read the lower-case name first).
    for f in &managed.environment {
        let shadowing: Vec<String> = d
            .vars
            .keys()
            .filter(|k| {
                **k != f.name && !d.forced.contains_key(*k) && k.eq_ignore_ascii_case(&f.name)
            })
            .cloned()
            .collect();
        for k in shadowing {
            d.vars.remove(&k);
            let note = DeclaredNote::Shadowed {
                name: k,
                forced: f.name.clone(),
                file: f.file.clone(),
            };
            d.left_out.push(note.to_string());
        }
        d.vars.insert(f.name.clone(), f.value.clone());
        d.forced.insert(f.name.clone(), f.file.clone());
    }
    d
}
