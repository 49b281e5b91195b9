//! The Host's dashboard login, set by setup: the password read from stdin (`--password-stdin`)
//! or typed at a hidden prompt (by `commands/setup`), hashed by the installed Oysterun's own
//! code (`host-service/dashboard-password.mjs`, the module its setup and its dashboard use),
//! and written to `config.json` with the rest of setup's merge.
//!
//! The password reaches the hashing child only on its stdin: never its arguments, its
//! environment, a file, a log line or the audit line; it is taught to the redaction first, so
//! no output of this run can show it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Said;
use crate::error::{Failed, Invalid};
use crate::sys::process::{ChildEnv, Program, STDIN_CAP};

/// Oysterun's password module, relative to the root (1.5.3: `hashDashboardPassword`,
/// `verifyDashboardPassword`; `scrypt$N=…,r=…,p=…,keylen=…$salt$key`).
pub const MODULE: &str = "host-service/dashboard-password.mjs";

/// How long hashing may take (scrypt at Oysterun's parameters takes well under a second).
const HASH_TIMEOUT: Duration = Duration::from_secs(30);

/// What the child runs: import the root's module (its path is the one argument), read the
/// password from stdin, hash it, check the hash with the module's own verifier, print it.
const SCRIPT: &str = r#"import { pathToFileURL } from "node:url";
const m = await import(pathToFileURL(process.argv[1]).href);
let pw = "";
for await (const chunk of process.stdin) pw += chunk;
const hash = m.hashDashboardPassword(pw);
if (!m.verifyDashboardPassword(pw, hash)) { console.error("the new hash does not verify"); process.exit(3); }
process.stdout.write(hash + "\n");
"#;

/// A password as typed: kept out of `Debug` and every message.
pub struct Password(String);

impl Password {
    /// A typed or piped password, checked as Oysterun checks one (non-empty, not only
    /// blanks); taught to the redaction at once.
    pub fn new(text: String) -> Result<Password, Invalid> {
        if text.trim().is_empty() {
            return Err(Invalid::new(
                "the Host password is empty; nothing was changed",
            ));
        }
        if text.len() > STDIN_CAP {
            return Err(Invalid::new(
                Said::PasswordTooLong { cap: STDIN_CAP }.to_string(),
            ));
        }
        crate::output::learn_secrets(vec![text.clone()]);
        Ok(Password(text))
    }

    /// Whether `other` is the same password (the prompt's confirmation).
    pub fn matches(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// Reads the password from stdin as `docker login --password-stdin` does: everything up to
/// the end of input, less one trailing newline (`\n` or `\r\n`).
/// A terminal is refused: the line discipline would echo what is typed there (the password on
/// the screen and in the scrollback), and nothing would say to end it with Ctrl-D.
pub fn read_stdin() -> Result<Password, Invalid> {
    use std::io::{IsTerminal, Read};
    if std::io::stdin().is_terminal() {
        return Err(
            Invalid::new(Said::StdinIsTerminal.to_string()).hint(Said::PipeItInOrAsk.to_string())
        );
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(STDIN_CAP as u64 + 3)
        .read_to_end(&mut bytes)
        .map_err(|e| Invalid::new(format!("--password-stdin: cannot read stdin: {e}")))?;
    if bytes.ends_with(b"\n") {
        bytes.pop();
        if bytes.ends_with(b"\r") {
            bytes.pop();
        }
    }
    let text =
        String::from_utf8(bytes).map_err(|_| Invalid::new(Said::PasswordNotUtf8.to_string()))?;
    if text.is_empty() {
        return Err(Invalid::new(Said::StdinEmpty.to_string()).hint(Said::PipeItIn.to_string()));
    }
    Password::new(text)
}

/// Where the installed Oysterun keeps its password module, or why it has none.
pub fn module(root: &Path) -> Result<PathBuf, String> {
    let path = root.join(MODULE);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Said::NoPasswordModule {
            root: root.to_owned(),
        }
        .to_string())
    }
}

/// The hash Oysterun stores for `password`, made by the root's own module with the pinned
/// Node (the password on the child's stdin only).
pub fn hash(node: &Path, root: &Path, password: &Password) -> anyhow::Result<String> {
    let module = module(root).map_err(|why| {
        Failed::new(
            format!("{why}; nothing was changed"),
            format!(
                "set the login with Oysterun's own setup: `{} {}`",
                node.display(),
                root.join("host-service/setup.mjs").display()
            ),
        )
    })?;
    let out = Program::new(node)
        .args(["--input-type=module", "-e", SCRIPT].iter().copied())
        .arg(module.as_os_str())
        .env(ChildEnv::Exactly(&[]))
        .cwd(root)
        .stdin(password.0.as_bytes())
        .timeout(HASH_TIMEOUT)
        .run()?;
    let hash = out.stdout.trim();
    if out.code != 0 || !hash.starts_with("scrypt$") {
        let said = out.stderr.trim().lines().last().unwrap_or("").to_owned();
        let failed = Said::HashFailed {
            module,
            code: out.code,
            said,
        };
        return Err(Failed::new(failed.to_string(), Said::CheckInstall.to_string()).into());
    }
    crate::output::learn_secrets(vec![hash.to_owned()]);
    Ok(hash.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_shows_in_debug_and_blank_ones_are_refused() {
        let p = Password::new("correct horse".into()).unwrap();
        assert_eq!(format!("{p:?}"), "Password(<redacted>)");
        assert!(Password::new("   ".into()).is_err());
        assert!(Password::new(String::new()).is_err());
    }
}
