#!/usr/bin/env bash
# Builds dist/oyster-<version>.pkg: the binary in /usr/local/bin, completions and man page,
# and scripts/postinstall, which installs or regenerates the console user's LaunchAgent.
# macOS only (pkgbuild and productbuild).
set -euo pipefail
if [ "$(uname -s)" != "Darwin" ]; then
  echo "build-pkg.sh needs macOS (pkgbuild/productbuild); this is $(uname -s)." >&2
  echo "Elsewhere use 'make install PREFIX=…' or the Homebrew formula." >&2
  exit 1
fi
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$top/Cargo.toml" | head -n 1)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
make -C "$top" install PREFIX=/usr/local DESTDIR="$stage/root"
mkdir -p "$top/dist"
pkgbuild --root "$stage/root" --scripts "$here/scripts" \
  --identifier com.oysterun.oyster --version "$version" --install-location / \
  "$stage/oyster-component.pkg"
productbuild --package "$stage/oyster-component.pkg" "$top/dist/oyster-$version.pkg"
echo "built $top/dist/oyster-$version.pkg"
