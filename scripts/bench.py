#!/usr/bin/env python3
"""oyster benchmarks: medians of whole-command runs, compared with the idioms they replace.

Run with `make bench` (it builds the release binary first). Each command runs in a fresh temp
HOME with a fake provider in ~/.local/bin. Prints a Markdown table and writes it to
target/bench/latest.md. This is a measurement, never a pass/fail test.
"""
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
OYSTER = ROOT / "target" / "release" / "oyster"
RUNS = int(os.environ.get("BENCH_RUNS", "60"))


def measure(argv, env):
    """Median and p90 wall time in ms over RUNS runs, after 3 warm-ups."""
    for _ in range(3):
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9) - 1]


def main():
    if not OYSTER.exists():
        sys.exit(f"{OYSTER} is missing; run `make bench`, which builds it")
    home = pathlib.Path(tempfile.mkdtemp(prefix="oyster-bench-"))
    try:
        local_bin = home / ".local" / "bin"
        local_bin.mkdir(parents=True)
        for name in ("claude", "codex"):
            exe = local_bin / name
            exe.write_text("#!/bin/sh\nexit 0\n")
            exe.chmod(0o755)
        env = {"HOME": str(home), "PATH": f"{local_bin}:/usr/bin:/bin"}
        node = shutil.which("node") or "node"
        true_bin = shutil.which("true") or "/bin/true"
        cases = [
            ("/bin/true (process start floor)", [true_bin]),
            ("oyster providers resolve --json", [str(OYSTER), "providers", "resolve", "--json"]),
            (
                "node execSync('command -v claude; codex') (the replaced idiom)",
                [node, "-e", "const {execSync}=require('child_process');"
                 "for (const p of ['claude','codex']) execSync('command -v '+p)"],
            ),
        ]
        rows = []
        for name, argv in cases:
            med, p90 = measure(argv, env)
            rows.append((name, med, p90))
        floor = rows[0][1]
        lines = [
            f"# oyster benchmarks ({RUNS} runs each, medians)",
            "",
            "| command | median ms | p90 ms | × /bin/true |",
            "|---|---:|---:|---:|",
        ]
        for name, med, p90 in rows:
            lines.append(f"| {name} | {med:.2f} | {p90:.2f} | {med / floor:.1f} |")
        resolve, idiom = rows[1][1], rows[2][1]
        lines += ["", f"resolve / node idiom: {resolve / idiom * 100:.1f}%"]
        text = "\n".join(lines) + "\n"
        print(text)
        out = ROOT / "target" / "bench"
        out.mkdir(parents=True, exist_ok=True)
        (out / "latest.md").write_text(text)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
