#!/usr/bin/env bash
# Fetch Debian's rustc-web toolchain (rustc, cargo, clippy and the matching standard-library
# sources) into a cache folder, without installing anything, so that `make check-macos` can
# type-check the Apple targets with `-Zbuild-std`. rustup's toolchain here has no rust-src and
# no Apple std, and its download server is not reachable from CI; Debian's packages are.
#
#   scripts/apple-toolchain.sh        prints the toolchain folder on stdout (progress on stderr)
#
# Folder: $OYSTER_APPLE_TOOLCHAIN, else ${XDG_CACHE_HOME:-$HOME/.cache}/oyster-apple-toolchain.
# A second run with the toolchain present does nothing (no apt, no network). To refresh it (a
# newer rustc-web), delete the folder. `. <folder>/env.sh` gives a shell the toolchain.
#
# Exit status: 0 ready; 77 the packages cannot be had here (no apt-get, the apt sources lack
# rustc-web, the download was refused) — the reason is the last stderr line, starting with
# "unavailable:", and callers skip on 77; 1 anything else (a real failure).
set -euo pipefail

SKIP=77
DEST=${OYSTER_APPLE_TOOLCHAIN:-${XDG_CACHE_HOME:-$HOME/.cache}/oyster-apple-toolchain}
STAMP="$DEST/.complete"
# What the check needs; their shared libraries missing on this host are added below.
PKGS=(rustc-web cargo-web rust-web-clippy rust-web-src libstd-rust-web-dev)

say() { echo "apple-toolchain: $*" >&2; }
unavailable() { echo "unavailable: $*" >&2; exit "$SKIP"; }

if [ -f "$STAMP" ] && [ -x "$DEST/usr/bin/cargo" ]; then
  echo "$DEST"
  exit 0
fi

for tool in apt-get apt-cache dpkg-deb dpkg-query; do
  command -v "$tool" >/dev/null || unavailable "$tool not found: Debian's rustc-web packages need a Debian-family host"
done

mkdir -p "$(dirname "$DEST")"
# One fetch at a time per folder; a second caller waits, then finds the stamp.
if command -v flock >/dev/null; then
  exec 9>"$DEST.lock"
  flock 9
  if [ -f "$STAMP" ] && [ -x "$DEST/usr/bin/cargo" ]; then
    echo "$DEST"
    exit 0
  fi
fi

is_root() { [ "$(id -u)" = 0 ]; }
APT_OPTS=(-q -o DPkg::Lock::Timeout=120)

refresh_lists() {
  is_root || return 1
  say "apt-get update"
  apt-get "${APT_OPTS[@]}" update >&2
}

# Known to the configured apt sources? (bookworm carries rustc-web in bookworm-updates/-security.)
if ! apt-cache show libstd-rust-web-dev >/dev/null 2>&1; then
  is_root || unavailable "the apt package lists do not know rustc-web, and refreshing them needs root"
  refresh_lists || unavailable "apt-get update failed"
  apt-cache show libstd-rust-web-dev >/dev/null 2>&1 \
    || unavailable "no rustc-web in the configured apt sources (Debian bookworm and newer ship it)"
fi

installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

# The shared-library packages (lib*, not -dev) the toolchain needs and this host lacks —
# libstd-rust-web-<version>, libllvm<N>, cargo's runtime libraries — followed transitively.
missing_libs() {
  local -A seen=()
  local queue=("${PKGS[@]}") pkg dep
  while [ "${#queue[@]}" -gt 0 ]; do
    pkg=${queue[0]}
    queue=("${queue[@]:1}")
    while read -r dep; do
      case "$dep" in lib*-dev | '<'*) continue ;; lib*) ;; *) continue ;; esac
      [ -n "${seen[$dep]:-}" ] && continue
      seen[$dep]=1
      installed "$dep" && continue
      echo "$dep"
      queue+=("$dep")
    done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances "$pkg" | sed -n 's/^ *|\{0,1\}Depends: //p')
  done
}

mapfile -t LIBS < <(missing_libs)
WANT=("${PKGS[@]}" "${LIBS[@]}")

STAGE=$(mktemp -d "$DEST.partial.XXXXXX")
DEBS=$(mktemp -d "${TMPDIR:-/tmp}/oyster-apple-debs.XXXXXX")
trap 'rm -rf "$STAGE" "$DEBS"' EXIT
# apt fetches as its sandbox user _apt, who must be able to write there.
if is_root && id _apt >/dev/null 2>&1; then chown _apt "$DEBS"; fi

download() { (cd "$DEBS" && apt-get "${APT_OPTS[@]}" download "${WANT[@]}") >&2; }
say "downloading ${WANT[*]} (about 150 MB)"
if ! download; then
  # Stale lists name files the mirror no longer has: refresh once, then give up.
  if refresh_lists && download; then
    :
  else
    unavailable "apt-get download ${WANT[*]} failed (offline, or the mirror refused)"
  fi
fi

say "unpacking"
mkdir "$STAGE/root"
for deb in "$DEBS"/*.deb; do
  dpkg-deb -x "$deb" "$STAGE/root"
  # shellcheck disable=SC2016 # dpkg's own ${fields}
  dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >>"$STAGE/packages"
done
rm -rf "$DEBS"
# -Zbuild-std needs library/ only: the compiler's own sources are ~365 MB of the unpacked 400.
for src in "$STAGE"/root/usr/src/rustc-*; do rm -rf "$src/compiler" "$src/src"; done
if ! [ -x "$STAGE/root/usr/bin/cargo" ] || ! [ -d "$STAGE/root/usr/lib/rustlib/src/rust/library" ]; then
  say "the unpacked packages lack cargo or the std sources"
  exit 1
fi

rm -rf "$DEST"
mv "$STAGE/root" "$DEST"

libdirs=""
for d in "$DEST"/usr/lib/*-linux-gnu* "$DEST"/lib/*-linux-gnu*; do
  if [ -d "$d" ]; then libdirs="$libdirs${libdirs:+:}$d"; fi
done
cat >"$DEST/env.sh" <<ENV
# Source me: Debian's rustc-web toolchain first, stable taking -Z flags (-Zbuild-std).
export PATH="$DEST/usr/bin:\$PATH"
export LD_LIBRARY_PATH="$libdirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export RUSTC="$DEST/usr/bin/rustc"
export RUSTC_BOOTSTRAP=1
ENV
# shellcheck source=/dev/null
if ! (. "$DEST/env.sh" && rustc -V && cargo -V && cargo clippy -V) >&2; then
  say "the unpacked toolchain does not run"
  exit 1
fi
mv "$STAGE/packages" "$STAMP"
say "ready: $DEST ($(du -sh "$DEST" | cut -f1))"
echo "$DEST"
