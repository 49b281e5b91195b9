#!/usr/bin/env bash
# `make check-macos`: type-check the whole workspace — the #[cfg(target_os = "macos")] code
# and every test (`--all-targets`: tests/it and launchd/tests must compile for a Mac too)
# included — for aarch64-apple-darwin and x86_64-apple-darwin, on Linux. Checks, never links.
# Two ways, the first that can be had:
#  - rustup's standard library for both targets (`rustup target add aarch64-apple-darwin
#    x86_64-apple-darwin`; CI's Linux job): plain cargo clippy --target, nothing else;
#  - otherwise (rustup's download server is not reachable from every machine): cargo clippy
#    -Zbuild-std with Debian's rustc-web toolchain (scripts/apple-toolchain.sh) and its
#    standard-library sources, as below. OYSTER_APPLE_TOOLCHAIN_DEBIAN=1 forces this way.
# Skips (exit 0, reason printed) only when neither can be had here.
#
# Debian's toolchain is older (1.85) than the workspace's rust-version (1.89), so, only here:
#  - `--ignore-rust-version`;
#  - a derived lockfile, $OUT/Cargo.lock: Cargo.lock with only the packages whose rust-version
#    is newer than that rustc moved to their newest semver-compatible version that supports
#    it (the moves are printed); `--locked` then holds cargo to that file. Rebuilt when
#    Cargo.lock, a manifest or the toolchain changes;
#  - the APIs and syntax stabilised after 1.85 that the workspace or a still-too-new
#    dependency uses (FEATURES) are switched on in those crates only, with
#    -Zcrate-attr=feature(..): 1.85 has them as unstable features;
#  - clippy's lint levels are those of 1.85 where they differ from rustup's clippy (ALLOW):
#    `make test` is the authority on lints; this check is for what only compiles on macOS.
set -euo pipefail
cd "$(dirname "$0")/.."

read -ra TARGETS <<<"${OYSTER_APPLE_TARGETS:-aarch64-apple-darwin x86_64-apple-darwin}"
OUT=${OYSTER_APPLE_TARGET_DIR:-target/apple}
# "use of unstable library feature `X`" / "`let` expressions in this position are unstable"
# in this check's output means: add X (let_chains) here.
FEATURES=(let_chains file_lock)
# Dependencies that need FEATURES but declare no rust-version (so too_new cannot see them).
NO_MSRV=(listeners)
ALLOW=(
  -A unknown_lints          # lints newer than clippy 1.85 named in #[allow]/#[expect]
  -A clippy::format_collect # warn-by-default in 1.85, pedantic in rustup's clippy
)

say() { echo "check-macos: $*"; }

# With rustup's standard library installed for every target (`rustup target add …`, as the
# Linux CI job does), nothing else is needed: the workspace's own toolchain and Cargo.lock,
# --all-targets (the library, the binaries and every test), never linked.
rustup_has_targets() {
  command -v rustup >/dev/null || return 1
  local installed t
  installed=$(rustup target list --installed 2>/dev/null) || return 1
  for t in "${TARGETS[@]}"; do
    grep -qx "$t" <<<"$installed" || return 1
  done
}
if [ -z "${OYSTER_APPLE_TOOLCHAIN_DEBIAN:-}" ] && rustup_has_targets; then
  failed=()
  for target in "${TARGETS[@]}"; do
    say "cargo clippy --workspace --all-targets --target $target ($(rustc -V), rustup's std)"
    start=$SECONDS
    if cargo clippy --workspace --all-targets --locked --target "$target" -- -D warnings; then
      say "$target: clean, tests included ($((SECONDS - start)) s)"
    else
      say "$target: FAILED ($((SECONDS - start)) s)"
      failed+=("$target")
    fi
  done
  if [ "${#failed[@]}" -gt 0 ]; then
    say "FAILED for ${failed[*]}"
    exit 1
  fi
  say "ok: ${TARGETS[*]} (lib, bins and tests)"
  exit 0
fi

rc=0
tc=$(scripts/apple-toolchain.sh) || rc=$?
if [ "$rc" = 77 ]; then
  say "SKIPPED: Debian's rustc-web toolchain cannot be had on this host (reason above)"
  exit 0
elif [ "$rc" != 0 ]; then
  say "FAILED: scripts/apple-toolchain.sh exited $rc"
  exit 1
fi
# shellcheck source=/dev/null
. "$tc/env.sh"
export CARGO_TARGET_DIR="$OUT"
unset RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER
RUSTC_VERSION=$(rustc -V | cut -d' ' -f2)
say "$(rustc -V), $(cargo clippy -V), std from $tc"
mkdir -p "$OUT"

# Prints name@version of each package in cargo metadata's JSON (stdin) whose rust-version is
# newer than $RUSTC_VERSION; with "registry", only packages from a registry.
too_new() {
  python3 -c '
import json, sys
have = tuple(int(x) for x in sys.argv[1].split(".")[:2])
for p in json.load(sys.stdin)["packages"]:
    rv = p.get("rust_version")
    if rv and tuple(int(x) for x in rv.split(".")[:2]) > have:
        if sys.argv[2] != "registry" or p["source"]:
            print(p["name"] + "@" + p["version"])
' "$RUSTC_VERSION" "${1:-all}"
}

# $OUT/Cargo.lock, from Cargo.lock, resolved in a copy of the manifests whose rust-version
# says $RUSTC_VERSION (cargo's rust-version-aware resolver then prefers what 1.85 can build).
derive_lock() {
  local key scratch meta pkgs args
  meta=$(cargo metadata --no-deps --format-version 1)
  key=$( { rustc -V; cat Cargo.lock; python3 -c '
import json, sys
m = json.load(sys.stdin)
for f in sorted({m["workspace_root"] + "/Cargo.toml"} | {p["manifest_path"] for p in m["packages"]}):
    sys.stdout.write(f + "\n" + open(f).read())' <<<"$meta"; } | sha256sum | cut -d' ' -f1)
  if [ -f "$OUT/Cargo.lock" ] && [ "$(cat "$OUT/Cargo.lock.key" 2>/dev/null)" = "$key" ]; then
    return
  fi
  say "deriving $OUT/Cargo.lock for rustc $RUSTC_VERSION"
  scratch="$OUT/lock-resolve"
  rm -rf "$scratch"
  mkdir -p "$scratch"
  python3 -c '
import json, os, re, shutil, sys
m, dst, ver = json.load(sys.stdin), sys.argv[1], sys.argv[2]
root = m["workspace_root"]
manifests = {root + "/Cargo.toml"} | {p["manifest_path"] for p in m["packages"]}
for f in manifests:
    out = os.path.join(dst, os.path.relpath(f, root))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    text = open(f).read()
    text = re.sub(r"(?m)^(\s*rust-version\s*=\s*)\"[^\"]*\"", lambda g: g[1] + "\"" + ver + "\"", text)
    open(out, "w").write(text)
for p in m["packages"]:
    for t in p["targets"]:
        out = os.path.join(dst, os.path.relpath(t["src_path"], root))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        open(out, "a").close()
shutil.copy(os.path.join(root, "Cargo.lock"), dst)
' "$scratch" "$RUSTC_VERSION" <<<"$meta"
  local before=""
  for _ in 1 2 3; do
    meta=$(cd "$scratch" && cargo metadata --format-version 1 --locked)
    pkgs=$(too_new registry <<<"$meta")
    if [ -z "$pkgs" ] || [ "$pkgs" = "$before" ]; then break; fi
    before=$pkgs
    args=()
    for p in $pkgs; do args+=(-p "$p"); done
    (cd "$scratch" && CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo update -q "${args[@]}")
  done
  python3 -c '
import re, sys
def versions(path):
    text = open(path).read()
    return {(n, v) for n, v in re.findall(r"(?m)^name = \"(.*)\"\nversion = \"(.*)\"", text)}
old, new = versions("Cargo.lock"), versions(sys.argv[1])
gone = sorted(old - new)
added = sorted(new - old)
for n, v in gone:
    to = [w for m, w in added if m == n]
    print("  %s %s -> %s" % (n, v, ", ".join(to) if to else "(dropped)"))
for n, v in added:
    if n not in {m for m, _ in gone}:
        print("  %s %s (added)" % (n, v))
' "$scratch/Cargo.lock"
  cp "$scratch/Cargo.lock" "$OUT/Cargo.lock"
  echo "$key" >"$OUT/Cargo.lock.key"
  rm -rf "$scratch"
}

derive_lock
# The derived lock file: cargo 1.96 took its path out of the command line into config
# (-Zlockfile-path + resolver.lockfile-path); Debian's cargo 1.85 (bookworm's cargo-web) has
# only the unstable flag `--lockfile-path`. Whichever this cargo knows.
lock_path=$(realpath -m "$OUT/Cargo.lock")
if cargo -Zhelp 2>/dev/null | grep -q 'lockfile-path'; then
  LOCK=(-Zlockfile-path --config "resolver.lockfile-path=\"$lock_path\"")
else
  LOCK=(-Zunstable-options --lockfile-path "$lock_path")
fi
failed=()
for target in "${TARGETS[@]}"; do
  # The crates that need FEATURES for this target: rust-version newer than this rustc.
  flags=$(printf '"-Zcrate-attr=feature(%s)",' "${FEATURES[@]}")
  config=()
  meta=$(cargo metadata "${LOCK[@]}" --format-version 1 --locked --filter-platform "$target")
  # Crates that declare no rust-version but use newer syntax (edition 2024 let chains).
  for p in $( (too_new <<<"$meta" | sed 's/@.*//'; printf '%s\n' "${NO_MSRV[@]}") | sort -u); do
    config+=(--config "profile.dev.package.$p.rustflags=[${flags%,}]")
  done
  # Build scripts (host code, the prebuilt host std) are compiled with the build-override
  # profile: only the syntax switch there.
  config+=(--config 'profile.dev.build-override.rustflags=["-Zcrate-attr=feature(let_chains)"]')
  say "cargo clippy --target $target"
  start=$SECONDS
  if cargo clippy -Zbuild-std -Zprofile-rustflags "${config[@]}" "${LOCK[@]}" --keep-going \
    --workspace --all-targets --locked --ignore-rust-version --target "$target" \
    -- -D warnings "${ALLOW[@]}"; then
    say "$target: clean ($((SECONDS - start)) s)"
  else
    say "$target: FAILED ($((SECONDS - start)) s)"
    failed+=("$target")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  say "FAILED for ${failed[*]}"
  exit 1
fi
say "ok: ${TARGETS[*]}"
