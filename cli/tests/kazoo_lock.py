# kazoo's Lock recipe on one path, for cli/tests/kazoo.rs (Debian's /usr/bin/python3
# with python3-kazoo).
#
# Usage: python3 kazoo_lock.py HOSTS PATH IDENTIFIER MODE
#   hold     acquire (waiting), print "HELD <node>", hold until stdin closes, release
#   try      acquire(blocking=False): print "HELD <node>" (then release) or "BUSY"
#   wait S   acquire(timeout=S): print "HELD <node>" (then release) or "TIMEOUT"

import sys

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

hosts, path, identifier, mode = sys.argv[1:5]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=30)
lock = zk.Lock(path, identifier)


def held():
    print("HELD", lock.node, flush=True)


try:
    if mode == "hold":
        lock.acquire()
        held()
        sys.stdin.read()
    elif mode == "try":
        if lock.acquire(blocking=False):
            held()
        else:
            print("BUSY", flush=True)
    elif mode == "wait":
        try:
            lock.acquire(timeout=float(sys.argv[5]))
            held()
        except LockTimeout:
            print("TIMEOUT", flush=True)
    else:
        sys.exit("unknown mode " + mode)
finally:
    lock.release()
    zk.stop()
    zk.close()
