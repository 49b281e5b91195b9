#!/usr/bin/env python3
"""Hold TCP ports the way a running Oysterun Host holds its port, until stdin closes.

    python3 scripts/hold-ports.py 8802 9902

For each port: listen on [::] with IPV6_V6ONLY off (every interface, IPv4 included, as the
Host's `server.listen(PORT)` does), or on 0.0.0.0 where the machine has no IPv6. Prints one
line per port, `held PORT` or `busy PORT` (something else already holds it: the port is held
either way), then `ready`, and keeps the sockets open until its stdin reaches end of file, so a
holder started with a pipe on stdin ends with whatever started it. A busy port is taken over
as soon as its holder lets it go (tried every 20 ms): when two suites run at once, the end of
the first one's holder does not free the port under the second.

Used by `scripts/test-fresh.sh` (the whole suite runs with production's 8802 and staging's
9902 held) and by tests/it/default_ports_held.rs. Loopback and the wildcard address only.
"""

import errno
import os
import select
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
    busy = []
    for arg in argv[1:]:
        port = int(arg)
        s = hold(port)
        print(("held %d" if s else "busy %d") % port, flush=True)
        if s:
            held.append(s)
        else:
            busy.append(port)
    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.02 if busy else None)
        if ready:
            if not os.read(stdin, 4096):
                return 0
            continue
        for port in list(busy):
            s = hold(port)
            if s:
                held.append(s)
                busy.remove(port)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
