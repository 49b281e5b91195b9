#!/usr/bin/env bash
# `make demo`: oyster's main job in a throw-away HOME, printed step by step: resolve providers,
# install the LaunchAgent into the bundled launchd simulator with a real Node Host (launchd runs
# oyster's launch program, `oyster host exec`, which becomes the Host), verify it, show the
# identity files Oysterun's own restart waits for, let launchd restart the Host on its own, add
# a provider, regenerate and see the Host's new PATH verified, then uninstall.
# Nothing outside the temp directory is touched, and nothing is left running.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# Where cargo put the build: $CARGO_TARGET_DIR when set (relative to the repository, where
# make runs cargo), else target/.
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
OYSTER="$TARGET/debug/oyster"
SIM="$TARGET/debug/launchctl-sim"
[ -x "$OYSTER" ] || { echo "make demo: $OYSTER is missing; run make build first" >&2; exit 1; }
NODE_BIN="$(command -v node)" || { echo "make demo needs node (v20+) on PATH" >&2; exit 1; }
DEMO="$(mktemp -d "${TMPDIR:-/tmp}/oyster-demo.XXXXXX")"

export HOME="$DEMO/home"
export OYSTER_LAUNCHCTL="$SIM" LAUNCHD_SIM_STATE="$DEMO/launchd" LAUNCHD_SIM_DRAIN_MS=300
export PATH="/usr/bin:/bin"
mkdir -p "$HOME/.local/bin" "$DEMO/oysterun/host-service"
# The Host: a real Node server standing in for Oysterun's (tests/fixtures/oysterun).
cp "$ROOT/tests/fixtures/oysterun/host-service/server.mjs" "$DEMO/oysterun/host-service/"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
STACK=(--stack demo)
HOSTARGS=(--root "$DEMO/oysterun" --node-bin "$NODE_BIN")

cleanup() {
  "$OYSTER" agent uninstall "${STACK[@]}" >/dev/null 2>&1 || true
  # The simulator's daemon exits by itself once nothing is loaded; wait for it, by its pid.
  for _ in $(seq 50); do [ -e "$LAUNCHD_SIM_STATE/daemon.pid" ] || break; sleep 0.1; done
  rm -rf "$DEMO"
}
trap cleanup EXIT

# A stand-in provider that records any execution: discovery must never run it.
fake_provider() {
  printf '#!/bin/sh\necho "%s was executed" >> "%s/executed.log"\n' "$1" "$DEMO" > "$2/$1"
  chmod +x "$2/$1"
}
fake_provider claude "$HOME/.local/bin"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
run() { printf '$ oyster %s\n' "$*"; "$OYSTER" "$@"; }

step "Resolve providers (claude is in ~/.local/bin, codex is nowhere); nothing is executed"
run providers resolve
step "Install the LaunchAgent into the launchd simulator and verify the running Host"
run agent install "${STACK[@]}" --port "$PORT" "${HOSTARGS[@]}"
step "Status: installed, loaded, running and verified are separate facts"
run agent status "${STACK[@]}"
RUN_DIR="$HOME/.oysterun-stacks/demo/run"
step "launchd runs oyster's launch program, which syncs the config, writes the identity files and execs node"
python3 -c 'import plistlib,sys; print(" ".join(plistlib.load(open(sys.argv[1],"rb"))["ProgramArguments"]))' \
  "$HOME/Library/LaunchAgents/com.oysterun.host.demo.plist" | sed "s#$ROOT#<oyster>#"
health() { python3 -c 'import json,sys,urllib.request; h=json.load(urllib.request.urlopen(sys.argv[1])); print("pid", h["pid"], "stack", h["stack"])' "http://127.0.0.1:$PORT/health"; }
echo "GET /health: $(health)   (the Host knows its stack: OYSTERUN_ROUTEC_STACK_NAME)"
step "The identity files Oysterun's own restart waits for: the pid file (the pid only) and the origin file"
printf 'oysterun-host-demo.pid: %s\n' "$(cat "$RUN_DIR/oysterun-host-demo.pid")"
sed "s#$HOME#~#g; s#$DEMO#<demo>#g" "$RUN_DIR/oysterun-host-demo.origin.tsv"
step "launchd restarts the Host on its own (kickstart -k, as KeepAlive after a crash): fresh identity files"
OLD_PID="$(cat "$RUN_DIR/oysterun-host-demo.pid")"
"$SIM" kickstart -k "gui/$(id -u)/com.oysterun.host.demo"
for _ in $(seq 100); do
  NEW_PID="$(cat "$RUN_DIR/oysterun-host-demo.pid" 2>/dev/null || true)"
  [ -n "$NEW_PID" ] && [ "$NEW_PID" != "$OLD_PID" ] && health >/dev/null 2>&1 && break
  sleep 0.1
done
echo "pid file: $OLD_PID -> $NEW_PID; GET /health: $(health)"
grep 'oyster host exec' "$HOME/.oysterun-stacks/demo/logs/oysterun-host.log" | tail -n 1 | sed "s#$HOME#~#g; s#$DEMO#<demo>#g"
step "Install codex in ~/bin, then regenerate: the plist changes, so oyster reloads (not kickstart)"
mkdir -p "$HOME/bin"; fake_provider codex "$HOME/bin"
run agent regenerate "${STACK[@]}"
step "The Host's live PATH, read from the kernel (/proc/<pid>/environ)"
PID="$("$OYSTER" agent status "${STACK[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')"
tr '\0' '\n' < "/proc/$PID/environ" | grep -E '^(PATH|OYSTERUN_NODE_BIN|OYSTERUN_ROUTEC_STACK_NAME)=' | sed "s#$HOME#~#g"
step "Regenerate again: nothing changed, so the running Host is left alone"
run agent regenerate "${STACK[@]}"
step "The Host log, secrets redacted (oyster logs -f follows it)"
run logs "${STACK[@]}" -n 3
step "Stop keeps the plist and disables the label (it stays stopped at login); start undoes it"
run stop "${STACK[@]}"
run list
run start "${STACK[@]}"
step "Uninstall: boot the job out, remove the plist, keep config and logs"
run agent uninstall "${STACK[@]}"
step "The audit log (one JSON line per lifecycle step)"
sed "s#$HOME#~#g" "$HOME/.oysterun-stacks/demo/logs/service-control.jsonl" | cut -c1-150

if [ -e "$DEMO/executed.log" ]; then
  echo "FAIL: discovery executed a provider" >&2; exit 1
fi
printf '\n\033[1mDemo finished: Host installed, verified, regenerated and removed; no provider executed.\033[0m\n'
