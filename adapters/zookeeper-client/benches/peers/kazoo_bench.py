# kazoo's Lock for zklock's side-by-side bench (benches/compare runs it with the Python of
# <target dir>/kazoo-venv, the newest kazoo from PyPI that scripts/test.sh installs, or with
# the Python named by COMPARE_KAZOO_PYTHON, and drives it line by line).
#
# Usage: python kazoo_bench.py <connect string> <sessions> <session timeout ms>
#
# Opens <sessions> KazooClients (one ZooKeeper session each), prints "ready", then runs one
# command per stdin line and answers each with one line ("ok ..." or "err <what>"). Every
# time is measured here (time.monotonic_ns()), so the interpreter's start and the pipe do
# not count. The commands are CuratorBench.java's (see there).

import sys
import threading
import time

from kazoo.client import KazooClient

CONNECT = sys.argv[1]
SESSIONS = int(sys.argv[2])
TIMEOUT_S = int(sys.argv[3]) / 1000.0

clients = []
for _ in range(SESSIONS):
    zk = KazooClient(hosts=CONNECT, timeout=TIMEOUT_S)
    zk.start(timeout=60)
    clients.append(zk)

held = []
herd = {}


def now():
    return time.monotonic_ns()


def csv(values):
    return ",".join(str(v) for v in values)


def start(target, *args):
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def cycles(path, n):
    lock = clients[0].Lock(path)
    acq, rel = [], []
    for _ in range(int(n)):
        t0 = now()
        lock.acquire()
        t1 = now()
        lock.release()
        acq.append(t1 - t0)
        rel.append(now() - t1)
    return "ok %s %s" % (csv(acq), csv(rel))


def contend(path, ms):
    end = now() + int(ms) * 1_000_000
    counts = [0] * len(clients)

    def loop(i):
        lock = clients[i].Lock(path)
        while now() < end:
            lock.acquire()
            counts[i] += 1
            lock.release()

    t0 = now()
    for t in [start(loop, i) for i in range(len(clients))]:
        t.join()
    return "ok %d %d" % (sum(counts), now() - t0)


def many(directory, locks, n):
    def loop(i):
        lock = clients[0].Lock("%s/l%d" % (directory, i))
        for _ in range(int(n)):
            lock.acquire()
            lock.release()

    t0 = now()
    for t in [start(loop, i) for i in range(int(locks))]:
        t.join()
    return "ok %d" % (now() - t0)


def hold(directory, n):
    # kazoo's Lock is not bound to a thread: a few threads take them all.
    n = int(n)
    workers = 16

    def loop(first):
        for i in range(first, n, workers):
            lock = clients[i % len(clients)].Lock("%s/l%d" % (directory, i))
            lock.acquire()
            held.append(lock)

    t0 = now()
    for t in [start(loop, k) for k in range(workers)]:
        t.join()
    return "ok %d" % (now() - t0)


def wait(directory, n):
    # A blocking acquire per waiting acquisition, as a kazoo user writes it.
    def acquire(lock):
        try:
            lock.acquire()
        except Exception:  # the client stopped at quit
            pass

    for i in range(int(n)):
        lock = clients[i % len(clients)].Lock("%s/l%d" % (directory, i))
        held.append(lock)
        start(acquire, lock)
    return "ok"


def start_herd(path):
    holder = clients[0].Lock(path)
    holder.acquire()
    herd["holder"] = holder
    herd["done"] = []
    herd["start"] = 0
    herd["threads"] = []
    guard = threading.Lock()

    def waiter(i):
        lock = clients[i].Lock(path)
        lock.acquire()
        t = now() - herd["start"]
        with guard:
            herd["done"].append(t)
        lock.release()

    for i in range(1, len(clients)):
        herd["threads"].append(start(waiter, i))
    return "ok"


def go():
    herd["start"] = now()
    herd["holder"].release()
    for t in herd["threads"]:
        t.join()
    return "ok %d %s" % (now() - herd["start"], csv(sorted(herd["done"])))


COMMANDS = {"cycles": cycles, "contend": contend, "many": many, "hold": hold,
            "wait": wait, "herd": start_herd, "go": go}

print("ready", flush=True)
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "quit":
        break
    try:
        reply = COMMANDS[words[0]](*words[1:])
    except Exception as e:  # the driver prints it and stops
        reply = "err %r" % (e,)
    print(reply, flush=True)
for zk in clients:
    zk.stop()
    zk.close()
print("ok", flush=True)
