# A fleet worker of kazoo's Lock for zklock's fleet harness (fleet/src/coord.rs starts it;
# the protocol and the record lines are fleet/src/worker.rs's and fleet/src/record.rs's).
#
# Usage: python kazoo_fleet.py key=value...
#
# One KazooClient (one ZooKeeper session) per fleet session and one thread per session
# running the fleet mix. Times are time.monotonic_ns(), CLOCK_MONOTONIC: the clock every
# worker process shares. A hold's trusted span ends at SUSPENDED or LOST and starts again
# when the client is CONNECTED again.

import math
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kazoo.client import KazooClient, KazooState

spec = dict(a.split("=", 1) for a in sys.argv[1:])
if spec["mode"] != "fleet":
    raise SystemExit("kazoo_fleet.py runs mode=fleet only, not " + spec["mode"])


def num(key):
    return int(spec[key])


records = []
records_lock = threading.Lock()
phase = 0  # 0 waiting, 1 running, 2 stopped
phase_cv = threading.Condition()


def now():
    return time.monotonic_ns()


def record(line):
    with records_lock:
        records.append(line)


def fault(session, kind, detail):
    record("F %d %d %s %s" % (session, now(), kind, str(detail).replace("\n", " ")))


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def pause(seconds):
    """Sleeps up to `seconds`, less if the run stops; False if it stopped."""
    end = time.monotonic() + seconds
    with phase_cv:
        while phase == 1:
            left = end - time.monotonic()
            if left <= 0:
                return True
            phase_cv.wait(left)
    return False


class Session:
    def __init__(self, index, zk):
        self.index = index
        self.zk = zk
        self.lock = threading.Lock()
        self.segments = None
        self.trusted_since = None

    def state_changed(self, state):
        t = now()
        with self.lock:
            if state in (KazooState.SUSPENDED, KazooState.LOST):
                if self.segments is not None and self.trusted_since is not None:
                    self.segments.append((self.trusted_since, t))
                    self.trusted_since = None
            elif state == KazooState.CONNECTED and self.segments is not None and self.trusted_since is None:
                self.trusted_since = t
        if state == KazooState.LOST:
            fault(self.index, "expired-holding-or-waiting", "LOST")


def exponential(rng, mean):
    return -math.log(1.0 - rng.random()) * mean


def run_session(s):
    with phase_cv:
        while phase == 0:
            phase_cv.wait()
    if phase != 1:
        return
    rng = random.Random(num("seed") ^ (s.index * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF))
    hot = s.index < num("hot_sessions")
    if not hot and not pause(rng.random() * num("think_ms") / 1000.0):
        return
    while phase == 1:
        if hot:
            path = "/fleet/hot/%d" % (s.index % num("hot_locks"))
            hold = num("hot_hold_ms") / 1000.0
        else:
            path = "/fleet/cold/%d" % rng.randrange(num("cold_locks"))
            hold = exponential(rng, num("hold_ms")) / 1000.0
        lock = s.zk.Lock(path)
        requested = now()
        try:
            got = lock.acquire(timeout=num("acquire_timeout_ms") / 1000.0)
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            fault(s.index, "acquire-error", "%s: %r" % (path, e))
            time.sleep(0.1)
            continue
        if not got:
            fault(s.index, "acquire-timeout", path)
            continue
        granted = now()
        with s.lock:
            s.segments = []
            s.trusted_since = granted if s.zk.connected else None
        time.sleep(hold)
        released = now()
        with s.lock:
            if s.trusted_since is not None:
                s.segments.append((s.trusted_since, released))
            segments = ";".join("%d-%d" % seg for seg in s.segments) or "-"
            s.segments = None
            s.trusted_since = None
        record("H %s %d %d %d %d %d %s" % (path, 1 if hot else 0, s.index, requested, granted, released, segments))
        try:
            lock.release()
        except Exception as e:  # noqa: BLE001
            fault(s.index, "release-error", "%s: %r" % (path, e))
        think = rng.randint(0, num("hot_think_ms")) / 1000.0 if hot else exponential(rng, num("think_ms")) / 1000.0
        if think > 0 and not pause(think):
            break


def connect(index):
    zk = KazooClient(hosts=spec["connect"], timeout=num("session_timeout_ms") / 1000.0)
    s = Session(index, zk)
    zk.add_listener(s.state_changed)
    try:
        zk.start(timeout=60)
    except Exception as e:  # noqa: BLE001
        sys.stderr.write("kazoo worker: session %d did not connect: %r\n" % (index, e))
        return None
    return s


def main():
    global phase
    indexes = [num("first") + i * num("stride") for i in range(num("count"))]
    with ThreadPoolExecutor(20) as pool:
        sessions = [s for s in pool.map(connect, indexes) if s is not None]
    threads = [threading.Thread(target=run_session, args=(s,), daemon=True) for s in sessions]
    for t in threads:
        t.start()
    say("ready %d" % len(sessions))
    for line in sys.stdin:
        line = line.strip()
        if line == "go":
            with phase_cv:
                phase = 1
                phase_cv.notify_all()
        elif line == "stop":
            break
    with phase_cv:
        phase = 2
        phase_cv.notify_all()
    for t in threads:
        t.join()
    with open(spec["out"], "w") as out:
        for r in records:
            out.write(r + "\n")
    say("done")
    for line in sys.stdin:
        if line.strip() == "close":
            break
    for s in sessions:
        s.zk.stop()
        s.zk.close()


main()
