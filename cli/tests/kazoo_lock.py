# kazoo's Lock recipe (or its Semaphore) on one path, for cli/tests/kazoo.rs (Debian's
# /usr/bin/python3 with python3-kazoo).
#
# Usage: python3 kazoo_lock.py HOSTS PATH IDENTIFIER MODE
#   hold     acquire (waiting), print "HELD <node>", hold until stdin closes, release
#   try      acquire(blocking=False): print "HELD <node>" (then release) or "BUSY"
#   wait S   acquire(timeout=S): print "HELD <node>" (then release) or "TIMEOUT"
#   shold N  the same as hold with a Semaphore of N leases (node: the lease's name)
#   stry N   the same as try with a Semaphore of N leases

import sys

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

hosts, path, identifier, mode = sys.argv[1:5]
zk = KazooClient(hosts=hosts, timeout=10.0)
zk.start(timeout=30)
if mode in ("shold", "stry"):
    lock = zk.Semaphore(path, identifier, max_leases=int(sys.argv[5]))
    mode = mode[1:]
else:
    lock = zk.Lock(path, identifier)


def held():
    node = getattr(lock, "node", None) or lock.create_path.rsplit("/", 1)[1]
    print("HELD", node, flush=True)


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
