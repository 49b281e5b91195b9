#!/usr/bin/env bash
# `make test-fresh`: run `make test` the way a newcomer's machine does. HEAD is cloned into a
# temporary directory (so nothing untracked, no earlier build and no target/ take part) and
# built with an empty CARGO_HOME (so no crate that an earlier build, another project or a
# `make check-macos` happened to download is there). Only the toolchain itself (rustup's) and
# node/python3/git are taken from the machine. Uncommitted changes are not tested: commit first.
# The temporary directory is removed at the end unless OYSTER_FRESH_KEEP is set.
# Production's port 8802 and staging's 9902 are held by another process (scripts/hold-ports.py,
# every interface, as a running Oysterun Host holds its port) for the whole run, as on a
# contributor's Mac where a Host already listens: the suite must not need them.
set -euo pipefail
cd "$(dirname "$0")/.."

git diff --quiet HEAD -- || echo "test-fresh: note: uncommitted changes are not tested (it clones HEAD)"
work=$(mktemp -d "${TMPDIR:-/tmp}/oyster-fresh.XXXXXX")
holder=""
cleanup() {
  if [ -n "$holder" ]; then
    exec 4>&- # its stdin: the holder ends at end of file
    wait "$holder" 2>/dev/null || true
  fi
  if [ -n "${OYSTER_FRESH_KEEP:-}" ]; then echo "test-fresh: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The holder reads its stdin from a FIFO this shell keeps open on fd 4 (so it lives exactly as
# long as this script), and reports `held PORT`/`busy PORT` lines, then `ready`.
mkfifo "$work/hold.in"
python3 scripts/hold-ports.py 8802 9902 <"$work/hold.in" >"$work/hold.out" &
holder=$!
exec 4>"$work/hold.in"
for _ in $(seq 100); do
  grep -qx ready "$work/hold.out" 2>/dev/null && break
  kill -0 "$holder" 2>/dev/null || { echo "test-fresh: hold-ports.py failed"; exit 1; }
  sleep 0.1
done
grep -qx ready "$work/hold.out" || { echo "test-fresh: hold-ports.py is not ready"; exit 1; }
echo "test-fresh: ports 8802 and 9902 held by pid $holder ($(grep -v ready "$work/hold.out" | tr '\n' ' '))"

git clone --quiet --no-hardlinks . "$work/oyster"
mkdir "$work/cargo-home"
echo "test-fresh: $(git rev-parse --short HEAD) in $work/oyster, CARGO_HOME=$work/cargo-home (empty)"
start=$(date +%s)
# The rustup proxies live in the old CARGO_HOME's bin; the toolchain itself in RUSTUP_HOME.
cd "$work/oyster"
fresh=(env -u CARGO_TARGET_DIR CARGO_HOME="$work/cargo-home" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}")
"${fresh[@]}" make test
# The tests that need a tool or root are #[ignore]d in `make test`; CI runs them next, so do we.
"${fresh[@]}" cargo test --workspace --locked -- --ignored
echo "test-fresh: make test and the ignored tests passed from a fresh clone in $(( $(date +%s) - start )) s"
