#!/usr/bin/env python3
"""Hold TCP ports the way a running Oysterun Host holds its port, until stdin closes.

    python3 scripts/hold-ports.py 8802 9902

For each port: listen on [::] with IPV6_V6ONLY off (every interface, IPv4 included, as the
Host's `server.listen(PORT)` does), or on 0.0.0.0 where the machine has no IPv6. Prints one
line per port, `held PORT` or `busy PORT` (something else already holds it: the port is held
either way), then `ready`, and keeps the sockets open until its stdin reaches end of file, so a
holder started with a pipe on stdin ends with whatever started it.

Used by `scripts/test-fresh.sh` (the whole suite runs with production's 8802 and staging's
9902 held) and by tests/it/default_ports_held.rs. Loopback and the wildcard address only.
"""

import errno
import socket
import sys


def hold(port):
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        addr = ("::", port)
    except OSError:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        addr = ("0.0.0.0", port)
    try:
        s.bind(addr)
    except OSError as e:
        s.close()
        if e.errno == errno.EADDRINUSE:
            return None
        raise
    s.listen(16)
    return s


def main(argv):
    if len(argv) < 2:
        print("usage: hold-ports.py PORT...", file=sys.stderr)
        return 2
    held = []
    for arg in argv[1:]:
        port = int(arg)
        s = hold(port)
        print(("held %d" if s else "busy %d") % port, flush=True)
        if s:
            held.append(s)
    print("ready", flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
