# kazoo's Lock recipe (or its Semaphore) on one path, for cli/tests/kazoo.rs and go.rs (Debian's
# /usr/bin/python3 with python3-kazoo).
#
# Usage: python3 kazoo_lock.py HOSTS PATH IDENTIFIER MODE
#   hold     acquire (waiting), print "HELD <node>", hold until stdin closes, release
#   try      acquire(blocking=False): print "HELD <node>" (then release) or "BUSY"
#   shold N  the same as hold with a Semaphore of N leases (node: the lease's name)
#   stry N   the same as try with a Semaphore of N leases

import sys

from kazoo.client import KazooClient

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
    else:
        sys.exit("unknown mode " + mode)
finally:
    lock.release()
    zk.stop()
    zk.close()
