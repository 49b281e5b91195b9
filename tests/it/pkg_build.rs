//! build-pkg.sh, against fakes of uname/cargo/lipo/codesign/pkgbuild/productbuild/xcrun: one
//! universal package with its payload and distribution, signed and notarized when asked.

use std::path::PathBuf;
use std::process::Command;

use crate::common::pkg::{script, sh_quote, take_log};
use crate::common::repo::{repo, VERSION};
use crate::common::TestContext;
use crate::common::{has_all, has_none};

#[test]
#[cfg_attr(
    target_os = "macos",
    ignore = "needs a machine that is not macOS: there build-pkg.sh really builds"
)]
fn build_pkg_refuses_off_macos() {
    let out = Command::new("bash").arg(repo().join("packaging/pkg/build-pkg.sh")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs macOS"));
}

struct BuildPkg {
    t: TestContext,
    fakes: PathBuf,
    log: PathBuf,
}

impl BuildPkg {
    fn new() -> BuildPkg {
        let t = TestContext::new();
        let fakes = t.path("fakes");
        let log = t.path("calls.log");
        let l = sh_quote(&log.display().to_string());
        let rec = format!("echo \"$(basename \"$0\") $*\" >> {l}\n");
        script(&fakes.join("uname"), "echo Darwin");
        // cargo: a "binary" per target that answers `man` and `completions SHELL`.
        script(
            &fakes.join("cargo"),
            &format!(
                "{rec}while [ $# -gt 0 ]; do [ \"$1\" = --target ] && t=\"$2\"; shift; done\n\
                 mkdir -p \"$CARGO_TARGET_DIR/$t/release\"\n\
                 printf '#!/bin/sh\\nif [ \"$1 $2\" = \"man --dir\" ]; then mkdir -p \"$3\"; echo \"$1 for %s\" > \"$3/oyster.1\"; echo \"$1 for %s\" > \"$3/oyster-agent.1\"; exit; fi\\necho \"$1 $2 for %s\"\\n' \"$t\" \"$t\" \"$t\" > \"$CARGO_TARGET_DIR/$t/release/oyster\"\n\
                 chmod 755 \"$CARGO_TARGET_DIR/$t/release/oyster\""
            ),
        );
        script(
            &fakes.join("lipo"),
            &format!("{rec}if [ \"$1\" = -create ]; then cp \"$4\" \"$3\"; fi"),
        );
        script(&fakes.join("codesign"), &rec);
        script(&fakes.join("xcrun"), &rec);
        // pkgbuild records the payload; productbuild keeps the distribution it was given.
        script(
            &fakes.join("pkgbuild"),
            &format!(
                "{rec}(cd \"$2\" && find . -type f -perm -u+x -exec echo 'x {{}}' ';' && find . -type f ! -perm -u+x -exec echo '- {{}}' ';' && find . -type l -exec sh -c 'echo \"l $1 -> $(readlink \"$1\")\"' _ {{}} ';') | sort > {}\n\
                 for a in \"$@\"; do last=\"$a\"; done; : > \"$last\"",
                sh_quote(&t.path("payload.txt").display().to_string())
            ),
        );
        script(
            &fakes.join("productbuild"),
            &format!(
                "{rec}cp \"$2\" {}\nfor a in \"$@\"; do last=\"$a\"; done; : > \"$last\"",
                sh_quote(&t.path("distribution.xml").display().to_string())
            ),
        );
        BuildPkg { t, fakes, log }
    }

    fn run(&self, env: &[(&str, &str)]) -> (i32, String, Vec<String>) {
        let mut c = Command::new("bash");
        c.arg(repo().join("packaging/pkg/build-pkg.sh"))
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", self.fakes.display()))
            .env("HOME", &self.t.home)
            .env("CARGO_TARGET_DIR", self.t.path("target"))
            .env("DIST_DIR", self.t.path("dist"));
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let calls = take_log(&self.log);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text, calls)
    }
}

#[test]
fn build_pkg_makes_one_universal_package_and_signs_it_when_asked() {
    let b = BuildPkg::new();
    let target = b.t.path("target");
    let pkg = b.t.path(&format!("dist/oyster-{VERSION}.pkg"));
    let manifest = repo().join("Cargo.toml");

    let (code, out, calls) = b.run(&[]);
    assert_eq!(code, 0, "{out}");
    has_all(&out, &["unsigned", &format!("built {}", pkg.display())]);
    assert_eq!(calls.len(), 6, "{calls:#?}");
    for (call, t) in calls.iter().zip(["aarch64-apple-darwin", "x86_64-apple-darwin"]) {
        assert_eq!(
            call,
            &format!(
                "cargo build --release --locked -p oyster --manifest-path {} --target {t}",
                manifest.display()
            )
        );
    }
    assert!(calls[2].starts_with("lipo -create -output ") && calls[2].ends_with(&format!(
        "/root/Library/Oysterun/bin/oyster {0}/aarch64-apple-darwin/release/oyster {0}/x86_64-apple-darwin/release/oyster",
        target.display()
    )), "{}", calls[2]);
    assert!(
        calls[3].starts_with("lipo ")
            && calls[3].ends_with("/Library/Oysterun/bin/oyster -verify_arch arm64 x86_64")
    );
    assert!(
        calls[4].starts_with("pkgbuild --root ")
            && calls[4].contains(&format!(
        " --scripts {} --identifier com.oysterun.oyster --version {VERSION} --install-location / ",
        repo().join("packaging/pkg/scripts").display()
    )),
        "{}",
        calls[4]
    );
    assert!(
        calls[5].starts_with("productbuild --distribution ")
            && calls[5].ends_with(&format!(" {}", pkg.display())),
        "{}",
        calls[5]
    );
    assert!(!calls[5].contains("--sign"));
    assert!(pkg.is_file());

    // The payload: the universal binary (executable) where only root can write, the link on
    // everyone's PATH to it, the uninstall script (executable), its man page and completions.
    let payload = std::fs::read_to_string(b.t.path("payload.txt")).unwrap();
    assert_eq!(
        payload.lines().collect::<Vec<_>>(),
        [
            "- ./Library/LaunchAgents/com.oysterun.oyster.login.plist",
            "- ./usr/local/share/bash-completion/completions/oyster",
            "- ./usr/local/share/fish/vendor_completions.d/oyster.fish",
            "- ./usr/local/share/man/man1/oyster-agent.1",
            "- ./usr/local/share/man/man1/oyster.1",
            "- ./usr/local/share/zsh/site-functions/_oyster",
            "l ./usr/local/bin/oyster -> /Library/Oysterun/bin/oyster",
            "x ./Library/Oysterun/bin/oyster",
            "x ./usr/local/bin/oyster-uninstall",
            "x ./usr/local/libexec/oyster-login",
        ]
    );
    // The distribution productbuild got: both architectures, this version, this component.
    let dist = std::fs::read_to_string(b.t.path("distribution.xml")).unwrap();
    has_all(&dist, &[r#"hostArchitectures="arm64,x86_64""#]);
    has_all(&dist, &[&format!(r#"version="{VERSION}""#)]);
    has_none(&dist, &["@VERSION@"]);
    has_all(&dist, &[r#"<pkg-ref id="com.oysterun.oyster" "#, ">oyster-component.pkg</pkg-ref>"]);
    let parsed = Command::new("python3")
        .args(["-c", "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.tag, r.find('options').get('hostArchitectures'))"])
        .arg(b.t.path("distribution.xml"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&parsed.stdout).trim(), "installer-gui-script arm64,x86_64");

    // Signed and notarized: the binary with the hardened runtime, the product with the
    // installer identity, then notarytool and stapler on the finished package.
    let app = "Developer ID Application: Oysterun (TEAM123)";
    let inst = "Developer ID Installer: Oysterun (TEAM123)";
    let (code, out, calls) = b.run(&[
        ("CODESIGN_IDENTITY", app),
        ("PKG_SIGN_IDENTITY", inst),
        ("NOTARY_PROFILE", "oyster-notary"),
    ]);
    assert_eq!(code, 0, "{out}");
    has_none(&out, &["unsigned"]);
    let names: Vec<&str> = calls.iter().map(|c| c.split(' ').next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "cargo",
            "cargo",
            "lipo",
            "lipo",
            "codesign",
            "pkgbuild",
            "productbuild",
            "xcrun",
            "xcrun"
        ]
    );
    assert!(
        calls[4]
            .starts_with(&format!("codesign --force --options runtime --timestamp --sign {app} ")),
        "{}",
        calls[4]
    );
    assert!(
        calls[6].ends_with(&format!(" --sign {inst} --timestamp {}", pkg.display())),
        "{}",
        calls[6]
    );
    assert_eq!(
        calls[7],
        format!(
            "xcrun notarytool submit {} --keychain-profile oyster-notary --wait",
            pkg.display()
        )
    );
    assert_eq!(calls[8], format!("xcrun stapler staple {}", pkg.display()));

    // Notarizing unsigned code is refused before anything is built.
    let (code, out, calls) = b.run(&[("NOTARY_PROFILE", "oyster-notary")]);
    assert_eq!(code, 1, "{out}");
    has_all(&out, &["NOTARY_PROFILE needs PKG_SIGN_IDENTITY and CODESIGN_IDENTITY"]);
    assert!(calls.is_empty(), "{calls:#?}");
}

/// Issue 39 item 6: the package's floor is the oldest macOS its own scripts run on. The
/// login step and the uninstaller read plists with `plutil -extract KEYPATH raw`, which plutil
/// has from macOS 12 (macOS 11's refuses it, as the fake's `FAKE_PLUTIL_NO_RAW` does; there
/// `oyster-uninstall` would find no home and leave agents pointing at a removed binary). So the
/// distribution productbuild is given allows macOS 12 and later, never 11.
#[test]
fn the_packages_floor_is_the_oldest_macos_its_scripts_run_on() {
    let b = BuildPkg::new();
    let (code, out, _) = b.run(&[]);
    assert_eq!(code, 0, "{out}");
    let parsed = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(r.find('volume-check/allowed-os-versions/os-version').get('min'))",
        ])
        .arg(b.t.path("distribution.xml"))
        .output()
        .unwrap();
    let min = String::from_utf8_lossy(&parsed.stdout).trim().to_owned();
    let major: u32 = min.split('.').next().unwrap().parse().unwrap();
    // What the scripts the package installs or runs need.
    let mut needs = 11;
    for script in [
        "packaging/pkg/oyster-login",
        "packaging/pkg/oyster-uninstall",
        "packaging/pkg/scripts/postinstall",
    ] {
        let text = std::fs::read_to_string(repo().join(script)).unwrap();
        let joined = text.replace("\\\n", " ");
        if joined.lines().any(|l| {
            !l.trim_start().starts_with('#')
                && l.contains("plutil\" -extract")
                && l.contains(" raw ")
        }) {
            needs = needs.max(12);
        }
    }
    assert_eq!(needs, 12, "the scripts no longer use `plutil … raw`: revisit the floor");
    assert!(
        major >= needs,
        "distribution.xml allows macOS {min}, but the package's scripts need macOS {needs}"
    );
}
