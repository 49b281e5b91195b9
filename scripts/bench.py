#!/usr/bin/env python3
"""oyster benchmarks: whole-command medians and peak memory, compared with what they replace.

Run with `make bench` (it builds release binaries first). Everything runs in a fresh temp HOME
with stand-in providers in ~/.local/bin, the launchd simulator and the Node Host fixture.
Prints a Markdown table and writes it to target/bench/latest.md. A measurement, never a test.
"""
import json
import os
import pathlib
import plistlib
import pwd
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
REL = ROOT / "target" / "release"
OYSTER = REL / "oyster"
SIM = REL / "launchctl-sim"
RUNS = int(os.environ.get("BENCH_RUNS", "40"))
RESTARTS = int(os.environ.get("BENCH_RESTARTS", "8"))
TIME = pathlib.Path("/usr/bin/time")


def run_once(argv, env):
    """Wall time (ms) of one run, spawned directly (posix_spawn)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(str(argv[0]), [str(a) for a in argv], env, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    os.close(devnull)
    ms = (time.perf_counter() - t0) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"benchmark command failed: {' '.join(map(str, argv))}")
    return ms


def peak_rss_kib(argv, env):
    """Peak RSS of the program itself, from GNU time (a small forker: Linux counts the
    pre-exec address space into ru_maxrss, so a child of this Python would report Python's)."""
    if not TIME.exists():
        return None
    out = subprocess.run([str(TIME), "-f", "%M", *map(str, argv)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    return int(out.stderr.strip().splitlines()[-1])


def measure(argv, env, runs=RUNS):
    for _ in range(3):
        run_once(argv, env)
    times = sorted(run_once(argv, env) for _ in range(runs))
    rss = peak_rss_kib(argv, env)
    return statistics.median(times), times[max(0, int(len(times) * 0.9) - 1)], "n/a" if rss is None else rss


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def recording_launchctl(work):
    """A wrapper that appends each launchctl argv to a file, then execs the simulator: the
    count of launchctl process starts per verb (on a Mac each is a process start plus an XPC
    round trip). Counts come from separate runs through this wrapper, so its own cost never
    enters a timed row."""
    log = work / "launchctl-calls.log"
    wrapper = work / "recording-launchctl"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{SIM}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def count_launchctl(argv, env, wrapper, log, ok=(0,)):
    """(launchctl starts, wall ms, the verbs called) of one run of argv through the wrapper."""
    log.write_text("")
    t0 = time.perf_counter()
    done = subprocess.run([str(a) for a in argv], env={**env, "OYSTER_LAUNCHCTL": str(wrapper)},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ms = (time.perf_counter() - t0) * 1000
    if done.returncode not in ok:
        sys.exit(f"counted command failed ({done.returncode}): {' '.join(map(str, argv))}\n"
                 f"{done.stderr}")
    calls = [line.split(" ", 1)[0] for line in log.read_text().splitlines() if line]
    verbs = {}
    for verb in calls:
        verbs[verb] = verbs.get(verb, 0) + 1
    return len(calls), ms, verbs


def host_own_start_ms(node, root, home):
    """How long the Host fixture itself takes from exec to answering /health 200."""
    samples = []
    for _ in range(RESTARTS):
        port = free_port()
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "OYSTERUN_PORT": str(port)}
        t0 = time.perf_counter()
        p = subprocess.Popen([node, str(root / "host-service/server.mjs")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.005)
        samples.append((time.perf_counter() - t0) * 1000)
        p.terminate()
        p.wait()
    return statistics.median(samples)


def exec_overhead(env, work, home):
    """`oyster host exec` against a bare exec of the same program with the same environment
    (the plist's EnvironmentVariables plus launchd's base), twice: with a stand-in node that
    exits at once (the launch program's own cost, precisely) and with the real node running a
    server.mjs that exits at once (what a launch adds to the Host's start)."""
    rows = []
    account = pwd.getpwuid(os.getuid())
    base = {"HOME": str(home), "USER": account.pw_name, "LOGNAME": account.pw_name,
            "SHELL": account.pw_shell, "TMPDIR": "/tmp"}
    fake = work / "fakenode/bin/node"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\n[ "$1" = --version ] && echo v22.0.0\nexit 0\n')
    fake.chmod(0o755)
    root = work / "exits-at-once"
    (root / "host-service").mkdir(parents=True)
    (root / "host-service/server.mjs").write_text("process.exit(0);\n")
    for name, node, runs in (("stand-in node that exits at once", str(fake), RUNS),
                             ("real node, server.mjs exits at once", shutil.which("node"), RUNS)):
        stack = ["--stack", "benchexec"]
        subprocess.run([OYSTER, "config", "sync", *stack, "--port", str(free_port())], env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        printed = subprocess.run([OYSTER, "agent", "print", *stack, "--root", str(root),
                                  "--node-bin", node], env=env, check=True,
                                 capture_output=True).stdout
        host_env = {**base, **plistlib.loads(printed)["EnvironmentVariables"]}
        bare = measure([node, root / "host-service/server.mjs"], host_env, runs)
        launched = measure([OYSTER, "host", "exec", *stack], host_env, runs)
        rows.append((name, bare, launched))
    return rows


# The fixture switch that makes the Host exit at once on SIGTERM (Node's default without a
# handler), the case where a restart meets launchd's throttle.
NO_SIGTERM_HANDLER = "no-sigterm-handler"


def launchctl_counts(env, work, root, node):
    """launchctl process starts and wall time per verb (one run each, default settle), the
    table of docs/performance.md. Returns rows (verb, starts, ms, verbs called, goal)."""
    wrapper, log = recording_launchctl(work)
    rows = []
    young_root = work / "oysterun-no-handler"
    (young_root / "host-service").mkdir(parents=True)
    shutil.copy(root / "host-service/server.mjs", young_root / "host-service")
    (young_root / "host-service" / NO_SIGTERM_HANDLER).write_text("")
    stack = ["--stack", "counted"]
    plan = [*stack, "--port", str(free_port()), "--root", str(young_root), "--node-bin", node]

    def row(name, argv, goal, ok=(0,)):
        n, ms, verbs = count_launchctl([OYSTER, *argv], env, wrapper, log, ok)
        rows.append((name, n, ms, verbs, goal))

    row("agent install", ["agent", "install", *plan], 6)
    row("restart of a Host started < 10 s ago (no SIGTERM handler)", ["restart", *stack], 8)
    # status and doctor also ask the Login Items state: in-process on a Mac, one more
    # launchctl start (`login-item-status`) against the simulator measured here.
    row("status", ["status", *stack], 3, ok=(0, 1))
    row("unchanged agent regenerate", ["agent", "regenerate", *stack], 2)
    row("doctor", ["doctor", *stack], 3, ok=(0, 1))
    time.sleep(1)
    row("restart of a Host started 1 s before", ["restart", *stack], 8)
    time.sleep(11)
    row("restart of an older Host (> 10 s)", ["restart", *stack], 6)
    made = 1
    for total in (1, 6, 10, 50):
        while made < total:
            subprocess.run([OYSTER, "config", "sync", "--stack", f"listed{made}",
                            "--port", str(free_port())], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            made += 1
        row(f"list with {total} stack(s) (one loaded)", ["list"], 3, ok=(0, 1))
    subprocess.run([OYSTER, "agent", "uninstall", *stack], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return rows


def main():
    for b in (OYSTER, SIM):
        if not b.exists():
            sys.exit(f"{b} is missing; run `make bench`, which builds it")
    work = pathlib.Path(tempfile.mkdtemp(prefix="oyster-bench-"))
    home = work / "home"
    env = {"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/bin:/bin",
           "OYSTER_LAUNCHCTL": str(SIM), "LAUNCHD_SIM_STATE": str(work / "sim"),
           "LAUNCHD_SIM_DRAIN_MS": "200"}
    node = shutil.which("node")
    true_bin = shutil.which("true") or "/bin/true"
    try:
        (home / ".local/bin").mkdir(parents=True)
        for name in ("claude", "codex"):
            exe = home / ".local/bin" / name
            exe.write_text("#!/bin/sh\nexit 0\n")
            exe.chmod(0o755)
        root = work / "oysterun"
        (root / "host-service").mkdir(parents=True)
        shutil.copy(ROOT / "tests/fixtures/oysterun/host-service/server.mjs", root / "host-service")
        port = free_port()
        stack = ["--stack", "bench", "--port", str(port), "--root", str(root), "--node-bin", node]
        subprocess.run([OYSTER, "agent", "install", *stack, "--settle-ms", "0"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = []
        floor = measure([true_bin], env)
        rows.append(("/bin/true (process start floor)", *floor))
        resolve = measure([OYSTER, "providers", "resolve", "--json"], env)
        rows.append(("oyster providers resolve --json", *resolve))
        idiom = measure([node, "-e", "const {execSync}=require('child_process');"
                         "for (const p of ['claude','codex']) execSync('command -v '+p)"], env)
        rows.append(("node execSync('command -v claude/codex') (replaced idiom)", *idiom))
        regen = measure([OYSTER, "agent", "regenerate", "--no-restart", *stack], env)
        rows.append(("oyster agent regenerate --no-restart (unchanged)", *regen))
        restart = measure([OYSTER, "agent", "restart", "--stack", "bench", "--settle-ms", "0"], env, RESTARTS)
        rows.append(("oyster agent restart --settle-ms 0 (simulator, real Node Host)", *restart))
        host_ms = host_own_start_ms(node, root, home)
        execs = exec_overhead(env, work, home)
        counts = launchctl_counts(env, work, root, node)
        for name, bare, launched in execs:
            rows.append((f"bare exec: {name}", *bare))
            rows.append((f"oyster host exec → {name}", *launched))
        subprocess.run([OYSTER, "agent", "uninstall", "--stack", "bench"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        lines = [
            f"# oyster benchmarks ({RUNS} runs each, {RESTARTS} restarts; medians)",
            "",
            "| command | median ms | p90 ms | peak RSS KiB |",
            "|---|---:|---:|---:|",
        ]
        for name, med, p90, rss in rows:
            lines.append(f"| {name} | {med:.2f} | {p90:.2f} | {rss} |")
        lines += [
            f"| Host fixture alone: exec to /health 200 | {host_ms:.2f} | | |",
            "",
            "| ratio | value | target |",
            "|---|---:|---:|",
            f"| resolve / node idiom | {resolve[0] / idiom[0] * 100:.1f}% | ≤ 5% |",
            f"| resolve / /bin/true | {resolve[0] / floor[0]:.2f}× | ≤ 2.5× |",
            f"| unchanged regenerate / node idiom | {regen[0] / idiom[0] * 100:.1f}% | |",
            f"| unchanged regenerate / /bin/true | {regen[0] / floor[0]:.2f}× | ≤ 4× |",
            f"| restart overhead over the Host's own start | {restart[0] - host_ms:.0f} ms | |",
        ]
        for name, bare, launched in execs:
            lines.append(f"| `host exec` overhead over a bare exec ({name}) | "
                         f"{launched[0] - bare[0]:.2f} ms | ≤ 5 ms |")
        lines += [
            "",
            "| verb (one run, default settle) | launchctl starts | goal | wall ms | calls |",
            "|---|---:|---:|---:|---|",
        ]
        for name, n, ms, verbs, goal in counts:
            called = ", ".join(f"{v} {c}" for v, c in sorted(verbs.items()))
            mark = "" if n <= goal else " ✗"
            lines.append(f"| {name} | {n}{mark} | ≤ {goal} | {ms:.0f} | {called} |")
        text = "\n".join(lines) + "\n"
        print(text)
        out = ROOT / "target" / "bench"
        out.mkdir(parents=True, exist_ok=True)
        (out / "latest.md").write_text(text)
    finally:
        subprocess.run([OYSTER, "agent", "uninstall", "--stack", "bench"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
