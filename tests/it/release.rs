//! The release path end to end, as the README's "Cutting a release" has a maintainer do it: in
//! a clone of this repository, tag the commit `v<version>`, run `make release-formula`, and
//! check that the formula's `url` and `sha256` name that archive, and that the archive, unpacked
//! alone, builds offline with `--locked` (as Homebrew builds the formula from it).
//!
//! The clone is of HEAD (`git clone` takes commits, not the working tree), so the Makefile and
//! `scripts/release-formula.sh` under test are the committed ones.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use crate::common::has_all;
use crate::common::repo::{
    archive_sha256, cargo_version, copy_release_files, formula_matches_its_tag, git, make,
    need_git_checkout, readme_section, repo, tool, VERSION,
};
use crate::common::{self, TestContext};

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The formula as `make release-formula` must leave it: `before` with any earlier `url` and
/// `sha256` lines dropped and the new pair right after `license`; nothing else changed.
fn with_release(before: &str, url: &str, sum: &str) -> String {
    let mut out = String::new();
    for line in before.lines() {
        if line.starts_with("  url \"") || line.starts_with("  sha256 \"") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line.starts_with("  license \"") {
            out.push_str(&format!("  url \"{url}\"\n  sha256 \"{sum}\"\n"));
        }
    }
    out
}

#[test]
#[ignore = "needs make and a git checkout, and builds the release archive offline (.ci/run runs it)"]
fn a_tagged_clone_gets_a_formula_naming_its_archive_and_the_archive_builds_offline() {
    need_git_checkout("the release path clones this repository");
    common::needed_tool("make", "apt-get install make");
    common::needed_tool("git", "apt-get install git");
    common::needed_tool("sha256sum", "apt-get install coreutils");
    let t = TestContext::new();
    let clone = t.path("clone");
    tool("git", &["clone", "-q", repo().to_str().unwrap(), clone.to_str().unwrap()], t.dir.path());
    let tag = format!("v{VERSION}");
    // A clone of a repository that is already released starts from no tag, as before a release.
    let _ = Command::new("git").args(["tag", "-d", &tag]).current_dir(&clone).output();
    let formula_path = clone.join("Formula/oyster.rb");
    let before = std::fs::read_to_string(&formula_path).unwrap();

    // Before the tag: refused naming it, the formula untouched, no archive made.
    let out = make(&clone, &["-s", "release-formula"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("there is no tag {tag}; tag the release commit first")),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&formula_path).unwrap(), before);
    assert!(!clone.join("dist").exists());

    // The maintainer's steps: an annotated tag, then make release-formula.
    git(&clone, &["tag", "-a", &tag, "-m", &format!("oyster {VERSION}")]);
    let out = make(&clone, &["-s", "release-formula"]);
    assert!(out.status.success(), "{}", text(&out));

    let name = format!("oyster-{VERSION}.tar.gz");
    let archive = clone.join("dist").join(&name);
    let sum = tool("sha256sum", &[&name], &clone.join("dist"));
    let sum = sum.split_whitespace().next().unwrap().to_owned();
    let url = format!("https://github.com/oysterun/oyster/releases/download/{tag}/{name}");
    let after = std::fs::read_to_string(&formula_path).unwrap();
    // The formula names the archive by the bytes on disk, and changed in those two lines only.
    assert_eq!(after, with_release(&before, &url, &sum));
    assert!(after.contains("\n  head \"https://github.com/oysterun/oyster.git\""));
    assert_eq!(
        std::fs::read_to_string(clone.join(format!("dist/{name}.sha256"))).unwrap(),
        format!("{sum}  {name}\n")
    );
    // The archive is the tag's (`git archive` of it gives the same bytes), and the check the
    // suite runs on a committed formula agrees.
    assert_eq!(archive_sha256(&clone, &tag, VERSION), sum);
    assert_eq!(formula_matches_its_tag(&clone, &after), Ok(true));
    // What the run told the maintainer to do next.
    let said = text(&out);
    has_all(&said, &[&format!("Formula/oyster.rb: sha256 {sum}")]);
    has_all(&said, &[&format!("Upload dist/{name} to the {tag} release")]);
    // Nothing else in the clone changed (dist/ is ignored).
    assert_eq!(git(&clone, &["status", "--porcelain"]), " M Formula/oyster.rb\n");

    // The archive alone is the release: unpacked outside the clone, every file of the tag
    // under oyster-<version>/, and it builds offline from the lock file, as brew would.
    let unpacked = t.path("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    tool("tar", &["-xzf", archive.to_str().unwrap()], &unpacked);
    let src = unpacked.join(format!("oyster-{VERSION}"));
    let mut tracked: Vec<String> =
        git(&clone, &["ls-tree", "-r", "--name-only", &tag]).lines().map(str::to_owned).collect();
    tracked.sort();
    let mut files = vec![];
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                files.push(rel);
            }
        }
    }
    files.sort();
    assert_eq!(files, tracked);

    let target = t.path("target");
    let started = Instant::now();
    let build = Command::new("cargo")
        .args(["build", "--offline", "--locked", "-p", "oyster"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&src)
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "the release archive does not build offline: {}",
        String::from_utf8_lossy(&build.stderr)
    );
    eprintln!("built the release archive offline in {:.0?}", started.elapsed());
    let bin = target.join("debug/oyster");
    let version = tool(bin.to_str().unwrap(), &["--version"], &src);
    assert_eq!(version.trim(), format!("oyster {VERSION}"));
    // The formula's own `test do`, by hand: a stub root and the real node give a plist.
    let root = t.path("stub-root");
    std::fs::create_dir_all(root.join("host-service")).unwrap();
    std::fs::write(root.join("host-service/server.mjs"), "// stand-in\n").unwrap();
    let node = common::real_node();
    let out = Command::new(&bin)
        .args(["agent", "print", "--root"])
        .arg(&root)
        .arg("--node-bin")
        .arg(&node)
        .env_clear()
        .env("HOME", &t.home)
        .env("PATH", "/usr/bin:/bin")
        .env("OYSTER_LAUNCHCTL", "none")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let plist = String::from_utf8(out.stdout).unwrap();
    has_all(&plist, &["<string>com.oysterun.host</string>"]);
    has_all(&plist, &[&format!("<string>{}</string>", node.display())]);
}

/// The README's "Cutting a release" names the steps the test above runs, and the url it tells
/// the maintainer to upload to is the one the script writes into the formula.
#[test]
fn the_readme_says_how_to_cut_a_release_with_the_url_the_script_writes() {
    let section = readme_section("Cutting a release");
    for step in [
        "version = \"X.Y.Z\"",
        "git tag -a vX.Y.Z",
        "make release-formula",
        "dist/oyster-X.Y.Z.tar.gz",
        "Formula/oyster.rb",
        "git push origin main vX.Y.Z",
    ] {
        assert!(section.contains(step), "the section lacks {step:?}:\n{section}");
    }
    let script = std::fs::read_to_string(repo().join("scripts/release-formula.sh")).unwrap();
    let template = script
        .lines()
        .find_map(|l| l.strip_prefix("url=\""))
        .expect("the script's url= line")
        .trim_end_matches('"');
    let url = template.replace("$version", "X.Y.Z");
    assert!(section.contains(&format!("`{url}`")), "{url} not in:\n{section}");
}

/// `version` with its last number one higher: 0.1.0 → 0.1.1.
fn next_version(version: &str) -> String {
    let (head, last) = version.rsplit_once('.').unwrap();
    format!("{head}.{}", last.parse::<u32>().unwrap() + 1)
}

/// Sets the first `version = "…"` of `dir`'s Cargo.toml, as a maintainer's bump does.
fn bump(dir: &Path, to: &str) {
    let path = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let from = format!("version = \"{}\"", cargo_version(dir));
    std::fs::write(&path, text.replacen(&from, &format!("version = \"{to}\""), 1)).unwrap();
}

/// The second release: after the first, Cargo.toml is bumped before the next tag, and the
/// formula keeps naming the last release until then (the suite's formula check must not fail
/// on that commit). A tag on a commit whose Cargo.toml has another version is refused: its
/// archive would build that other version under the new name. Then the new tag gets its own
/// url and sha256.
#[test]
fn the_next_release_keeps_the_last_one_in_the_formula_until_its_own_tag() {
    if common::runner_tool("make").is_none()
        || common::runner_tool("git").is_none()
        || common::runner_tool("sha256sum").is_none()
    {
        eprintln!("skipped: make release-formula needs make, git and sha256sum");
        return;
    }
    let t = TestContext::new();
    let dir = t.path("repo");
    copy_release_files(&dir);
    std::fs::write(dir.join(".gitignore"), "/dist\n").unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "release"]);
    let first = format!("v{VERSION}");
    git(&dir, &["tag", "-a", &first, "-m", "first"]);
    assert!(make(&dir, &["-s", "release-formula"]).status.success());
    git(&dir, &["commit", "-qam", "Formula: the first release"]);
    let formula_path = dir.join("Formula/oyster.rb");
    let released = std::fs::read_to_string(&formula_path).unwrap();
    assert_eq!(formula_matches_its_tag(&dir, &released), Ok(true));

    // The bump to the next version, not tagged yet: the formula still names the first
    // release, and that is right.
    let next = next_version(VERSION);
    bump(&dir, &next);
    git(&dir, &["commit", "-qam", "bump"]);
    assert_eq!(formula_matches_its_tag(&dir, &released), Ok(true));

    // The tag put on the commit before the bump: refused, nothing written.
    let next_tag = format!("v{next}");
    git(&dir, &["tag", "-a", &next_tag, "-m", "next", "HEAD~1"]);
    let out = make(&dir, &["-s", "release-formula"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "the tag {next_tag} is a commit whose Cargo.toml has version \"{VERSION}\""
        )),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&formula_path).unwrap(), released);
    assert!(!dir.join(format!("dist/oyster-{next}.tar.gz")).exists());
    // Tagged but not yet in the formula: the check says what to run.
    let err = formula_matches_its_tag(&dir, &released).unwrap_err();
    has_all(&err, &[&format!("the formula still names {first}; run make release-formula")]);

    // The tag moved to the bump: the formula names the new archive.
    git(&dir, &["tag", "-d", &next_tag]);
    git(&dir, &["tag", "-a", &next_tag, "-m", "next"]);
    let out = make(&dir, &["-s", "release-formula"]);
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(&formula_path).unwrap();
    let name = format!("oyster-{next}.tar.gz");
    let sum = tool("sha256sum", &[&name], &dir.join("dist"));
    let sum = sum.split_whitespace().next().unwrap();
    let url = format!("https://github.com/oysterun/oyster/releases/download/{next_tag}/{name}");
    assert_eq!(written, with_release(&released, &url, sum));
    assert_eq!(archive_sha256(&dir, &next_tag, &next), sum);
    assert_eq!(formula_matches_its_tag(&dir, &written), Ok(true));
    // A url for a release that was never tagged is caught.
    let untagged = written.replace(&next_tag, "v9.9.9").replace(&name, "oyster-9.9.9.tar.gz");
    let err = formula_matches_its_tag(&dir, &untagged).unwrap_err();
    has_all(&err, &["there is no tag v9.9.9"]);
}
