#!/usr/bin/env python3
"""Runs a command on a real pseudo-terminal, types an answer at its [y/N] or [y/s/N] prompt, and prints
a JSON report: everything the terminal showed, the exit code, and whether it prompted.

Usage: pty_drive.py HEX_ANSWER COMMAND [ARGS...]   (the environment is passed through)
An empty HEX_ANSWER types nothing. With PTY_SCRIPT set (a JSON list of [TEXT, HEX] pairs),
HEX_ANSWER is not used: each HEX is typed once the terminal shows its TEXT after the previous
one (a hidden password prompt asked twice); "prompted" is then whether every step was typed.
With PTY_PASSWORD set, it is typed (and Enter) at each "Host password: " and "Again, to
confirm: " prompt, whatever else is answered. With PTY_WHILE_ASKED set (a JSON argv), that command is
started while the prompt waits, its stderr read until it says "waiting for" (at most 10 s),
then it is interrupted (SIGINT) and what it said is reported as "while_asked"; only then is
the answer typed. The terminal is 80 columns wide, 24 lines high (what a
newcomer's terminal is). Used by oyster's PTY tests (tests/it/setup.rs, tests/it/everyday.rs).
"""
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time



def meanwhile(argv):
    """Runs argv until it says it waits (or 10 s), interrupts it, returns what it said."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    said = b""
    end = time.time() + 10
    while time.time() < end and b"waiting for" not in said:
        ready, _, _ = select.select([p.stderr], [], [], 0.05)
        if ready:
            chunk = os.read(p.stderr.fileno(), 4096)
            if not chunk:
                break
            said += chunk
    p.send_signal(signal.SIGINT)
    _, rest = p.communicate(timeout=30)
    return (said + rest).decode("utf-8", "replace")


answer = bytes.fromhex(sys.argv[1])
while_asked = None
cmd = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    os.execv(cmd[0], cmd)
out = b""
sent = False
script = json.loads(os.environ.get("PTY_SCRIPT", "null"))
password = os.environ.get("PTY_PASSWORD")
typed_password = 0
step = 0
seen = 0
deadline = time.time() + 60
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.05)
    if ready:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if password is not None:
        asked = out.count(b"Host password: ") + out.count(b"Again, to confirm: ")
        if asked > typed_password:
            time.sleep(0.1)
            os.write(fd, password.encode() + b"\r")
            typed_password += 1
    if script is not None:
        if step < len(script):
            at = out.find(script[step][0].encode(), seen)
            if at >= 0:
                seen = at + len(script[step][0].encode())
                time.sleep(0.1)
                os.write(fd, bytes.fromhex(script[step][1]))
                step += 1
        sent = step == len(script)
    elif not sent and (b"[y/N]" in out or b"[y/s/N]" in out):
        time.sleep(0.1)
        if os.environ.get("PTY_WHILE_ASKED"):
            while_asked = meanwhile(json.loads(os.environ["PTY_WHILE_ASKED"]))
        os.write(fd, answer)
        sent = True
else:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
print(json.dumps({
    "output": out.decode("utf-8", "replace"),
    "code": os.waitstatus_to_exitcode(status),
    "prompted": sent,
    "while_asked": while_asked,
}))
