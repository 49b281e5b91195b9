#!/usr/bin/env bash
# `make demo`: oyster end to end in a throw-away HOME, printed step by step.
# Nothing outside the temp directory is touched, and nothing is left running.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OYSTER="$ROOT/target/debug/oyster"
DEMO="$(mktemp -d "${TMPDIR:-/tmp}/oyster-demo.XXXXXX")"
trap 'rm -rf "$DEMO"' EXIT

export HOME="$DEMO/home"
mkdir -p "$HOME/.local/bin"
# A stand-in provider: it records any execution, so the demo can show discovery never runs it.
cat > "$HOME/.local/bin/claude" <<SH
#!/bin/sh
echo "claude was executed" >> "$DEMO/executed.log"
SH
chmod +x "$HOME/.local/bin/claude"
ORIG_PATH="$PATH"
export PATH="/usr/bin:/bin"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
run() { printf '$ oyster %s\n' "$*"; "$OYSTER" "$@"; }

step "Resolve providers (claude is in ~/.local/bin, codex is nowhere)"
run providers resolve
step "Sync the stack config: migrate, merge what was found, record intent"
run config sync
step "A second sync changes nothing (the file keeps its bytes and mtime)"
run config sync
step "The user owns codex's command (manual), even though it is not installed yet"
run providers set codex "~/tools/codex"
step "Status: availability, separate from authentication; home shown as ~"
run providers status
step "The config as stored (secrets would be redacted)"
run config show

# The Host: a real Node server standing in for Oysterun's (tests/fixtures/oysterun).
ROOTDIR="$DEMO/oysterun"
mkdir -p "$ROOTDIR/host-service"
cp "$ROOT/tests/fixtures/oysterun/host-service/server.mjs" "$ROOTDIR/host-service/"
NODE_BIN="$(command -v node || true)"
[ -z "$NODE_BIN" ] && NODE_BIN="$(PATH="/usr/local/bin:/usr/bin:/bin:$ORIG_PATH" command -v node)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cleanup_host() { "$OYSTER" host stop --stack demo >/dev/null 2>&1 || true; }
trap 'cleanup_host; rm -rf "$DEMO"' EXIT

step "Generate the LaunchAgent plist (printed, nothing written)"
run agent print --stack demo --port "$PORT" --root "$ROOTDIR" --node-bin "$NODE_BIN"
step "Start the Host directly (pid file), wait for /health, verify its live environment"
run host start --stack demo --port "$PORT" --root "$ROOTDIR" --node-bin "$NODE_BIN"
step "Host status"
run host status --stack demo
step "Stop it (only the exact recorded pid is signalled)"
run host stop --stack demo

if [ -e "$DEMO/executed.log" ]; then
  echo "FAIL: discovery executed a provider" >&2; exit 1
fi
printf '\n\033[1mDemo finished: no provider was executed, nothing left behind.\033[0m\n'
