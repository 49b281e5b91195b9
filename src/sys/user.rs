//! Who oyster runs as: uids from the kernel and the account from the user database, through
//! `nix` (whose `User::from_uid` grows its buffer on `ERANGE` instead of giving up).

use std::path::Path;

use nix::unistd::{Uid, User};

/// The real uid.
pub fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// The effective uid.
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Whether this process may do what macOS keeps to administrators (`log show` refuses anyone
/// else): root, or a member of the `admin` group (gid 80 on macOS; a system without such a
/// group has no administrators by that name). Membership is the group's member list, as
/// macOS fleet tools read it (`getgrnam("admin")`; `getgroups` is not offered for Apple
/// targets, whose group lists come from the directory service), or its gid as the primary one.
pub fn is_admin() -> bool {
    if euid() == 0 {
        return true;
    }
    let Ok(Some(admin)) = nix::unistd::Group::from_name("admin") else {
        return false;
    };
    nix::unistd::getegid() == admin.gid || name_of(uid()).is_some_and(|me| admin.mem.contains(&me))
}

/// The current user's account: login name and shell, as launchd would take them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub shell: String,
}

/// Why the account could not be read. Words: `commands/words/sys.rs`.
#[derive(Debug)]
pub enum AccountError {
    Missing(u32),
    Lookup { uid: u32, errno: nix::errno::Errno },
}

impl std::error::Error for AccountError {}

/// Reads the account of the real uid.
pub fn account() -> Result<Account, AccountError> {
    let uid = uid();
    match User::from_uid(Uid::from_raw(uid)) {
        Ok(Some(u)) => Ok(Account {
            name: u.name,
            shell: u.shell.to_string_lossy().into_owned(),
        }),
        Ok(None) => Err(AccountError::Missing(uid)),
        Err(errno) => Err(AccountError::Lookup { uid, errno }),
    }
}

/// The login name of `uid`, when the user database knows it.
pub fn name_of(uid: u32) -> Option<String> {
    User::from_uid(Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The uid that owns `path`, when it can be read.
pub fn owner_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.uid())
}

/// The per-user temp dir a launchd job gets in `TMPDIR`.
///
/// # Platform
/// macOS gives each user a private temp dir (`confstr(_CS_DARWIN_USER_TEMP_DIR)`, for which
/// nix has no wrapper); elsewhere the system's `/tmp`.
pub fn tmpdir() -> String {
    #[cfg(target_os = "macos")]
    {
        let mut buf = vec![0u8; 1024];
        #[allow(unsafe_code)]
        // SAFETY: confstr writes at most `buf.len()` bytes, NUL included, into a buffer we own,
        // and returns the length it needed (0 on failure).
        let n = unsafe {
            nix::libc::confstr(
                nix::libc::_CS_DARWIN_USER_TEMP_DIR,
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n > 0 && n <= buf.len() {
            let s = std::ffi::CStr::from_bytes_until_nul(&buf)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !s.is_empty() {
                return s;
            }
        }
    }
    "/tmp".into()
}
