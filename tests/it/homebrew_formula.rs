//! The Homebrew formula: a tap layout with every stanza, head-only until a release is tagged,
//! `make release-formula` writing the tag's url and sha256, valid Ruby, and its `test do` run
//! against the real binary.

use std::path::Path;
use std::process::Command;

use crate::common::has_all;
use crate::common::repo::{
    archive_sha256, copy_release_files, formula, formula_matches_its_tag, git, make,
    readme_section, repo, ruby, VERSION,
};
use crate::common::{self, TestContext};

#[test]
fn the_formula_lives_in_a_tap_layout_with_every_stanza() {
    let f = formula();
    assert!(!repo().join("packaging/homebrew").exists(), "one formula: Formula/oyster.rb");
    let line = |start: &str| {
        f.lines()
            .map(str::trim)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in the formula"))
            .to_owned()
    };
    // url/sha256 only for a release that exists (checked against its tag's archive below).
    formula_matches_its_tag(repo(), &f).unwrap();
    assert_eq!(line("license "), "license \"MIT\"");
    assert!(line("head ").starts_with("head \"https://github.com/oysterun/oyster.git\""));
    assert!(f.contains("livecheck do") && f.contains("strategy :github_latest"));
    // No brew service: it would be a second plist and a second Host on the same port.
    assert!(!f.lines().any(|l| l.trim_start().starts_with("service do")), "no `service do` block");
    assert!(f.contains("homebrew.mxcl.oyster"), "the comment says why");
    // Nothing pretends to be an Oysterun root; HOME is brew's own testpath.
    assert!(
        !f.contains("pkgshare") && !f.contains("share/\"oyster") && !f.contains("ENV[\"HOME\"]")
    );
    let test = &f[f.find("test do").expect("test do")..];
    for needle in
        ["oyster --version", "agent print --root ", " --node-bin ", "host-service/server.mjs"]
    {
        assert!(test.contains(needle), "test do lacks {needle:?}");
    }
    let caveats = &f[f.find("def caveats").expect("caveats")..f.find("test do").unwrap()];
    for needle in [
        "oyster setup --root <your Oysterun install>",
        "npm install -g oysterun",
        "oyster agent regenerate",
        "Before `brew uninstall oyster`",
        "oyster agent uninstall --all",
    ] {
        assert!(caveats.contains(needle), "caveats lack {needle:?}");
    }
}

#[test]
fn the_formula_is_head_only_until_a_tag_and_the_readme_says_so() {
    let f = formula();
    let quick = readme_section("Quick start");
    if formula_matches_its_tag(repo(), &f).unwrap() {
        has_all(&quick, &["brew install oyster"]);
    } else {
        eprintln!("skipped the sha256 check: there is no tag v{VERSION} yet (head-only formula)");
        assert!(f.contains("\n  head \"https://github.com/oysterun/oyster.git\""));
        has_all(&quick, &["brew install --HEAD oyster"]);
    }
}

#[test]
fn make_release_formula_writes_the_url_and_sha256_of_the_tags_archive() {
    if common::runner_tool("make").is_none() || common::runner_tool("git").is_none() {
        eprintln!("skipped: make release-formula needs make and git");
        return;
    }
    // A repository with what the release needs, tagged as a release would be.
    let t = TestContext::new();
    let dir = t.path("release");
    copy_release_files(&dir);
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "release"]);
    // No tag yet: refused, naming the tag; the formula is untouched (and head-only).
    let out = make(&dir, &["-s", "release-formula"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no tag v{VERSION}")));
    assert_eq!(std::fs::read_to_string(dir.join("Formula/oyster.rb")).unwrap(), formula());
    assert!(!formula_matches_its_tag(&dir, &formula()).unwrap());

    git(&dir, &["tag", &format!("v{VERSION}")]);
    // A commit after the tag: the archive is the tag's, not HEAD's.
    std::fs::write(dir.join("later.txt"), "after the release\n").unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "later"]);
    let out = make(&dir, &["-s", "release-formula"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(dir.join("Formula/oyster.rb")).unwrap();
    assert!(formula_matches_its_tag(&dir, &written).unwrap(), "{written}");
    let sum =
        std::fs::read_to_string(dir.join(format!("dist/oyster-{VERSION}.tar.gz.sha256"))).unwrap();
    has_all(&written, &[&format!("sha256 \"{}\"", &sum[..64])]);
    assert_ne!(archive_sha256(&dir, "HEAD", VERSION), sum[..64]);
    // Once: a second run replaces the pair instead of adding one.
    assert!(make(&dir, &["-s", "release-formula"]).status.success());
    let again = std::fs::read_to_string(dir.join("Formula/oyster.rb")).unwrap();
    assert_eq!(again, written);
    assert_eq!(again.matches("\n  sha256 \"").count(), 1);
    // A committed sha256 that is not the tag's archive is caught.
    let tampered = written.replace(&sum[..64], &"0".repeat(64));
    let err = formula_matches_its_tag(&dir, &tampered).unwrap_err();
    has_all(&err, &["run make release-formula"]);
}

#[test]
#[ignore = "needs ruby (.ci/run installs and runs it)"]
fn the_formula_is_valid_ruby() {
    let ruby = ruby();
    let out = common::output_ok(Command::new(ruby).arg("-c").arg(repo().join("Formula/oyster.rb")));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Syntax OK");
}

/// Enough of Homebrew's Formula DSL to load the formula and run its `test do` and `caveats`
/// the way `brew test` does: as instance methods, with HOME = testpath. Plain Ruby 2.6 (the
/// macOS system Ruby): no endless methods.
const BREW_STUB: &str = r##"
require "open3"
require "pathname"

class Formula
  class << self
    attr_reader :stub_url

    def url(value, **)
      @stub_url = value
    end
    def test(&block)
      define_method(:stub_test, &block)
    end
    def method_missing(*, **)
      nil
    end
    def respond_to_missing?(*)
      true
    end

    def [](name)
      raise "the test asks for an unexpected formula: #{name}" unless name == "node"

      Struct.new(:opt_bin).new(Pathname(ENV.fetch("STUB_NODE_DIR")))
    end
  end

  class StubVersion
    def initialize(string, head)
      @string = string
      @head = head
    end
    def to_s
      @string
    end
    def head?
      @head
    end
  end

  def bin
    Pathname(ENV.fetch("STUB_BIN_DIR"))
  end
  def testpath
    Pathname(ENV.fetch("HOME"))
  end
  # A head-only formula (no release yet) is a HEAD build, as `brew install --HEAD` makes.
  def version
    url = self.class.stub_url
    return StubVersion.new("HEAD", true) unless url

    StubVersion.new(url[%r{/oyster-(\d+\.\d+\.\d+)\.tar\.gz\z}, 1], false)
  end

  def shell_output(cmd, result = 0)
    out, status = Open3.capture2(cmd)
    raise "#{cmd} exited #{status.exitstatus}, not #{result}" unless status.exitstatus == result

    out
  end

  def assert_match(pattern, text)
    found = pattern.is_a?(Regexp) ? pattern.match?(text) : text.include?(pattern)
    raise "expected #{pattern.inspect} in:\n#{text}" unless found
  end
end

load ARGV.fetch(0)
formula = Oyster.new
puts formula.caveats
formula.stub_test
puts "formula test passed"
"##;

#[test]
#[ignore = "needs ruby (.ci/run installs and runs it)"]
fn the_formula_test_block_passes_against_the_real_binary() {
    let ruby = ruby();
    let t = TestContext::new();
    let stub = t.path("brew_stub.rb");
    std::fs::write(&stub, BREW_STUB).unwrap();
    let bin = Path::new(common::BIN).parent().unwrap();
    let node = common::real_node();
    let out = Command::new(ruby)
        .arg(&stub)
        .arg(repo().join("Formula/oyster.rb"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &t.home)
        .env("STUB_BIN_DIR", bin)
        .env("STUB_NODE_DIR", node.parent().unwrap())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    has_all(&text, &["formula test passed"]);
    has_all(&text, &["oyster setup --root <your Oysterun install>"]);
    // It wrote nothing outside its stub root.
    let left: Vec<_> =
        std::fs::read_dir(&t.home).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("oysterun")]);
}
