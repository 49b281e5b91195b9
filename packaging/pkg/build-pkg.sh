#!/usr/bin/env bash
# Builds dist/oyster-<version>.pkg, one package for every Mac (macOS 12 or later):
#   1. one universal binary: cargo builds aarch64-apple-darwin and x86_64-apple-darwin and lipo
#      joins them (once: rustup target add aarch64-apple-darwin x86_64-apple-darwin);
#   2. the payload: the binary at /Library/Oysterun/bin/oyster, where only root can write on
#      every Mac (root runs that path: with Homebrew on an Intel Mac /usr/local/bin belongs to a
#      user, who could replace what root runs), /usr/local/bin/oyster a link to it for
#      everyone's PATH, /usr/local/bin/oyster-uninstall (what removes it all again: `sudo
#      oyster-uninstall`), its man pages and bash/zsh/fish completions, and the login step for
#      users not logged in at install time (/usr/local/libexec/oyster-login, run by
#      /Library/LaunchAgents/com.oysterun.oyster.login.plist);
#   3. pkgbuild makes the component package with scripts/postinstall, and productbuild the
#      product from distribution.xml, which declares hostArchitectures="arm64,x86_64".
#
# Signing and notarization. Gatekeeper blocks an unsigned package and MDM's
# InstallEnterpriseApplication refuses one, so a package for anyone else must be signed and
# notarized:
#   CODESIGN_IDENTITY  "Developer ID Application: NAME (TEAMID)": signs the binary with the
#                      hardened runtime and a secure timestamp; notarization rejects a package
#                      holding an executable without them.
#   PKG_SIGN_IDENTITY  "Developer ID Installer: NAME (TEAMID)": productbuild --sign.
#   NOTARY_PROFILE     a notarytool keychain profile, made once with
#                        xcrun notarytool store-credentials NAME --apple-id ID --team-id TEAMID
#                      When set, the signed package is notarized and the ticket stapled to it:
#                        xcrun notarytool submit dist/oyster-X.pkg --keychain-profile NAME --wait
#                        xcrun stapler staple dist/oyster-X.pkg
#                      (on a rejection: xcrun notarytool log SUBMISSION-ID --keychain-profile NAME)
# Check the result with: spctl --assess --type install -vv dist/oyster-X.pkg
# Without identities the package is unsigned, which is fine only for testing on your own Mac.
#
# Also read: CARGO_TARGET_DIR (as cargo does) and DIST_DIR (default: <repository>/dist).
# Written for the bash 3.2 that macOS ships (no mapfile, guarded empty arrays).
set -euo pipefail
if [ "$(uname -s)" != "Darwin" ]; then
  echo "build-pkg.sh needs macOS (lipo, pkgbuild, productbuild); this is $(uname -s)." >&2
  echo "Elsewhere use 'make install PREFIX=…', 'make dist' or the Homebrew formula." >&2
  exit 1
fi
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$top/Cargo.toml" | head -n 1)"
identifier="com.oysterun.oyster"
targets=(aarch64-apple-darwin x86_64-apple-darwin)
target_dir="${CARGO_TARGET_DIR:-$top/target}"
dist="${DIST_DIR:-$top/dist}"

if [ -n "${NOTARY_PROFILE:-}" ] &&
  { [ -z "${PKG_SIGN_IDENTITY:-}" ] || [ -z "${CODESIGN_IDENTITY:-}" ]; }; then
  echo "NOTARY_PROFILE needs PKG_SIGN_IDENTITY and CODESIGN_IDENTITY: Apple's notary service" \
    "rejects unsigned code." >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  installed="$(rustup target list --installed)"
  for t in "${targets[@]}"; do
    if ! grep -qx "$t" <<<"$installed"; then
      echo "the Rust target $t is missing; run: rustup target add ${targets[*]}" >&2
      exit 1
    fi
  done
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

slices=()
for t in "${targets[@]}"; do
  cargo build --release --locked -p oyster --manifest-path "$top/Cargo.toml" --target "$t"
  slices+=("$target_dir/$t/release/oyster")
done

prefix="$stage/root/usr/local"
share="$prefix/share"
rootbin="$stage/root/Library/Oysterun/bin"
install -d -m 0755 "$rootbin" "$stage/root/Library/Oysterun"
install -d "$prefix/bin" "$share/man/man1" "$share/bash-completion/completions" \
  "$share/zsh/site-functions" "$share/fish/vendor_completions.d"
bin="$rootbin/oyster"
lipo -create -output "$bin" "${slices[@]}"
ln -s /Library/Oysterun/bin/oyster "$prefix/bin/oyster"
lipo "$bin" -verify_arch arm64 x86_64
chmod 0755 "$bin"
if [ -n "${CODESIGN_IDENTITY:-}" ]; then
  codesign --force --options runtime --timestamp --sign "$CODESIGN_IDENTITY" "$bin"
fi
install -m 0755 "$here/oyster-uninstall" "$prefix/bin/oyster-uninstall"
# The step for users not logged in at install time: an admin LaunchAgent that runs
# oyster-login at their next login (packaging/pkg/oyster-login says what it does).
install -d "$prefix/libexec" "$stage/root/Library/LaunchAgents"
install -m 0755 "$here/oyster-login" "$prefix/libexec/oyster-login"
install -m 0644 "$here/com.oysterun.oyster.login.plist" \
  "$stage/root/Library/LaunchAgents/com.oysterun.oyster.login.plist"
"$bin" man --dir "$share/man/man1"
"$bin" completions bash >"$share/bash-completion/completions/oyster"
"$bin" completions zsh >"$share/zsh/site-functions/_oyster"
"$bin" completions fish >"$share/fish/vendor_completions.d/oyster.fish"

pkgbuild --root "$stage/root" --scripts "$here/scripts" \
  --identifier "$identifier" --version "$version" --install-location / \
  "$stage/oyster-component.pkg"
sed "s/@VERSION@/$version/g" "$here/distribution.xml" >"$stage/distribution.xml"
sign=()
if [ -n "${PKG_SIGN_IDENTITY:-}" ]; then
  sign=(--sign "$PKG_SIGN_IDENTITY" --timestamp)
else
  echo "note: PKG_SIGN_IDENTITY is not set; the package is unsigned (Gatekeeper and MDM refuse it)." >&2
fi
mkdir -p "$dist"
out="$dist/oyster-$version.pkg"
productbuild --distribution "$stage/distribution.xml" --package-path "$stage" \
  ${sign[@]+"${sign[@]}"} "$out"

if [ -n "${NOTARY_PROFILE:-}" ]; then
  xcrun notarytool submit "$out" --keychain-profile "$NOTARY_PROFILE" --wait
  xcrun stapler staple "$out"
fi
echo "built $out"
