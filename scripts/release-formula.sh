#!/usr/bin/env bash
# `make release-formula`: writes Formula/oyster.rb's `url` and `sha256` for the release of
# Cargo.toml's version, from the archive `make dist` makes of the tag v<version> (so the
# sha256 is that of the bytes GitHub's release will hold, never of another commit).
#
# Usage: scripts/release-formula.sh ARCHIVE VERSION
#   ARCHIVE  dist/oyster-<version>.tar.gz, made by `make dist DIST_REF=v<version>`
# The url/sha256 pair goes right after the `license` line, replacing an earlier pair; the
# formula keeps its `head` line, so `brew install --HEAD oyster` still builds main.
set -euo pipefail
archive="$1"
version="$2"
here="$(cd "$(dirname "$0")/.." && pwd)"
formula="$here/Formula/oyster.rb"
[ -f "$archive" ] || {
  echo "release-formula: $archive is missing; run make dist DIST_REF=v$version first" >&2
  exit 1
}
if command -v sha256sum >/dev/null 2>&1; then
  sum="$(sha256sum "$archive" | cut -d ' ' -f 1)"
else
  sum="$(shasum -a 256 "$archive" | cut -d ' ' -f 1)"
fi
url="https://github.com/oysterun/oyster/releases/download/v$version/oyster-$version.tar.gz"
tmp="$formula.tmp.$$"
awk -v url="$url" -v sum="$sum" '
  /^  url "/ || /^  sha256 "/ { next }
  { print }
  /^  license "/ { printf "  url \"%s\"\n  sha256 \"%s\"\n", url, sum }
' "$formula" >"$tmp"
grep -q "^  sha256 \"$sum\"" "$tmp" || {
  rm -f "$tmp"
  echo "release-formula: $formula has no \`license\` line to put url/sha256 after" >&2
  exit 1
}
mv "$tmp" "$formula"
echo "Formula/oyster.rb: url $url"
echo "Formula/oyster.rb: sha256 $sum"
echo "Upload $archive to the v$version release, then commit Formula/oyster.rb."
