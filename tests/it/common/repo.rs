//! This repository as the packaging and release tests read it: its files, its version, the
//! tools they run in it (git, make, rustc), and the rule a committed Homebrew formula keeps.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The checkout the suite was built from.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The version Cargo.toml gives oyster.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The committed Homebrew formula.
pub fn formula() -> String {
    std::fs::read_to_string(repo().join("Formula/oyster.rb")).unwrap()
}

/// The README.
pub fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The README's section `## HEADING`, up to the next `## ` heading.
pub fn readme_section(heading: &str) -> String {
    readme()
        .split(&format!("\n## {heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("README has a `## {heading}` section"))
        .split("\n## ")
        .next()
        .unwrap()
        .to_owned()
}

/// Fails the test unless this runs in a git checkout (not an unpacked archive): `why` is
/// what needs one.
pub fn need_git_checkout(why: &str) {
    let in_git = Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(repo())
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(in_git, "{why}: run this test in a git checkout");
}

/// What `make release-formula` needs of this repository, copied into `dir` (a new repository
/// the test tags as a release would be).
pub fn copy_release_files(dir: &Path) {
    for file in ["Makefile", "Cargo.toml", "Formula/oyster.rb", "scripts/release-formula.sh"] {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo().join(file), &to).unwrap();
    }
}

/// `git` in `dir` with an identity of its own (the runner may have none) and no signing.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec![
        "-c",
        "user.name=release test",
        "-c",
        "user.email=release@test.invalid",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "tag.gpgsign=false",
    ];
    all.extend_from_slice(args);
    tool("git", &all, dir)
}

/// `make ARGS` in `dir`, whatever its exit.
pub fn make(dir: &Path, args: &[&str]) -> Output {
    Command::new("make").args(args).current_dir(dir).output().expect("make")
}

/// Ruby, for the `#[ignore = "needs ruby"]` formula tests.
pub fn ruby() -> PathBuf {
    super::needed_tool("ruby", "apt-get install ruby")
}

/// The triple `rustc` builds for here (its `host:` line), the platform the suite's own build
/// downloaded crates for.
pub fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let vv = tool(&rustc, &["-vV"], Path::new("."));
    vv.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("rustc -vV has no host line:\n{vv}"))
        .trim()
        .to_owned()
}

/// `name ARGS` in `dir`, which must succeed: its stdout.
pub fn tool(name: &str, args: &[&str], dir: &Path) -> String {
    let out = Command::new(name)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        out.status.success(),
        "{name} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The sha256 of `make dist`'s archive of `git_ref` in `dir` (as `git archive` makes it, under
/// `oyster-<version>/`).
pub fn archive_sha256(dir: &Path, git_ref: &str, version: &str) -> String {
    let out = super::output_ok(
        Command::new("git")
            .args(["archive", "--format=tar.gz", &format!("--prefix=oyster-{version}/"), git_ref])
            .current_dir(dir),
    );
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let sum = child.wait_with_output().unwrap();
    String::from_utf8(sum.stdout).unwrap()[..64].to_owned()
}

/// The `version` of `dir`'s Cargo.toml (its first `version = "…"` line, as the Makefile reads it).
pub fn cargo_version(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .expect("Cargo.toml has a version line")
        .trim_end_matches('"')
        .to_owned()
}

/// The release rule for `formula` in the repository `dir`. A formula with a `url` names a
/// release vA.B.C: that tag exists, the url is its archive's, and the `sha256` is that of
/// `make dist`'s archive of the tag. A head-only formula (no url, no sha256) is right until the
/// version in Cargo.toml is tagged; once it is, the formula must name that release (run
/// `make release-formula`). Between a release and the next tag (Cargo.toml already bumped) the
/// formula keeps naming the last release. `Ok(false)`: head-only.
pub fn formula_matches_its_tag(dir: &Path, formula: &str) -> Result<bool, String> {
    let field = |key: &str| {
        formula
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(&format!("{key} \"")))
            .map(|v| v.trim_end_matches('"').to_owned())
    };
    let tagged = |tag: &str| {
        Command::new("git")
            .args(["rev-parse", "-q", "--verify", &format!("refs/tags/{tag}")])
            .current_dir(dir)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let current = cargo_version(dir);
    let current_tag = format!("v{current}");
    let (url, sum) = match (field("url"), field("sha256")) {
        (None, None) if tagged(&current_tag) => {
            return Err(format!(
            "there is a tag {current_tag}, but the formula is head-only; run make release-formula"
        ))
        }
        (None, None) => return Ok(false),
        (Some(url), Some(sum)) => (url, sum),
        (u, s) => {
            return Err(format!(
                "the formula needs both url and sha256 or neither, but has url {u:?}, sha256 {s:?}"
            ))
        }
    };
    let prefix = "https://github.com/oysterun/oyster/releases/download/v";
    let version = url
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_once('/'))
        .filter(|(v, file)| *file == format!("oyster-{v}.tar.gz"))
        .map(|(v, _)| v.to_owned())
        .ok_or_else(|| format!("the url {url:?} is not {prefix}X.Y.Z/oyster-X.Y.Z.tar.gz"))?;
    let tag = format!("v{version}");
    if !tagged(&tag) {
        return Err(format!(
            "the formula names release {tag}, but there is no tag {tag}; a formula is head-only until its release is tagged"
        ));
    }
    if version != current && tagged(&current_tag) {
        return Err(format!(
            "there is a tag {current_tag}, but the formula still names {tag}; run make release-formula"
        ));
    }
    let want = archive_sha256(dir, &tag, &version);
    if sum == want {
        Ok(true)
    } else {
        Err(format!(
            "the sha256 is {sum:?}, but make dist's archive of {tag} has {want}; run make release-formula"
        ))
    }
}
