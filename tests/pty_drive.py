#!/usr/bin/env python3
"""Runs a command on a real pseudo-terminal, types an answer at its [y/N] prompt, and prints
a JSON report: everything the terminal showed, the exit code, and whether it prompted.

Usage: pty_drive.py HEX_ANSWER COMMAND [ARGS...]   (the environment is passed through)
An empty HEX_ANSWER types nothing. The terminal is 80 columns wide, 24 lines high (what a
newcomer's terminal is). Used by oyster's PTY tests (tests/it/setup.rs, tests/it/everyday.rs).
"""
import fcntl
import json
import os
import pty
import select
import struct
import sys
import termios
import time

answer = bytes.fromhex(sys.argv[1])
cmd = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    os.execv(cmd[0], cmd)
out = b""
sent = False
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
    if not sent and b"[y/N]" in out:
        time.sleep(0.1)
        os.write(fd, answer)
        sent = True
else:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
print(json.dumps({
    "output": out.decode("utf-8", "replace"),
    "code": os.waitstatus_to_exitcode(status),
    "prompted": sent,
}))
