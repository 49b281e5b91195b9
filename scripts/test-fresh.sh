#!/usr/bin/env bash
# `make test-fresh`: run `make test` the way a newcomer's machine does. HEAD is cloned into a
# temporary directory (so nothing untracked, no earlier build and no target/ take part) and
# built with an empty CARGO_HOME (so no crate that an earlier build, another project or a
# `make check-macos` happened to download is there). Only the toolchain itself (rustup's) and
# node/python3/git are taken from the machine. Uncommitted changes are not tested: commit first.
# The temporary directory is removed at the end unless OYSTER_FRESH_KEEP is set.
set -euo pipefail
cd "$(dirname "$0")/.."

git diff --quiet HEAD -- || echo "test-fresh: note: uncommitted changes are not tested (it clones HEAD)"
work=$(mktemp -d "${TMPDIR:-/tmp}/oyster-fresh.XXXXXX")
cleanup() {
  if [ -n "${OYSTER_FRESH_KEEP:-}" ]; then echo "test-fresh: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

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
