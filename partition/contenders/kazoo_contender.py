# A kazoo 2.8 contender for zklock's partition tests (partition/src/contenders.rs runs
# it with Debian's /usr/bin/python3 and python3-kazoo, in a network namespace).
#
# Usage: python3 kazoo_contender.py <connect string> <lock path> <name> <session timeout ms>
#                                   <hold ms> <pause ms>
#
# Takes the kazoo Lock at <lock path> again and again, holding it <hold ms> each time, and
# prints a history line per event on stdout (the format of partition/src/history.rs):
# "<time.monotonic_ns()> <name> <lock path> <event> [arg]", with the events
# acquire-request, granted <czxid of our lock node>, suspended, resumed, lost <state>,
# released (printed when we decide to let go, before the delete). suspended, resumed and
# lost are kazoo's connection states SUSPENDED, CONNECTED and LOST while we hold the lock;
# after LOST the lock counts as lost. time.monotonic_ns() is CLOCK_MONOTONIC, the clock of
# every other contender.
#
# Stdin: "stick" makes the next hold last until LOST (at most 60 s); end of input stops:
# the lock is released, the client closed, the process exits.

import sys
import threading
import time

from kazoo.client import KazooClient, KazooState

CONNECT, PATH, NAME = sys.argv[1], sys.argv[2], sys.argv[3]
SESSION_MS, HOLD_MS, PAUSE_MS = (int(a) for a in sys.argv[4:7])
out = threading.Lock()
stick = threading.Event()
stop = threading.Event()
holding = threading.Event()
lost = threading.Event()


def log(event):
    with out:
        sys.stdout.write("%d %s %s %s\n" % (time.monotonic_ns(), NAME, PATH, event))
        sys.stdout.flush()


def on_state(state):
    # Called on kazoo's connection thread: print and return at once.
    if not holding.is_set():
        return
    if state == KazooState.SUSPENDED:
        log("suspended")
    elif state == KazooState.CONNECTED:
        log("resumed")
    elif state == KazooState.LOST:
        lost.set()
        log("lost LOST")


def read_input():
    for line in sys.stdin:
        if line.strip() == "stick":
            stick.set()
    stop.set()


zk = KazooClient(hosts=CONNECT, timeout=SESSION_MS / 1000.0)
zk.add_listener(on_state)
zk.start(timeout=30)
threading.Thread(target=read_input, daemon=True).start()
log("ready")
lock = zk.Lock(PATH, NAME)
while not stop.is_set():
    log("acquire-request")
    try:
        got = lock.acquire(timeout=30)
    except Exception as e:  # connection loss, session expiry: ask again
        log("failed %s" % type(e).__name__)
        time.sleep(PAUSE_MS / 1000.0)
        continue
    if not got:
        log("failed timeout")
        continue
    lost.clear()
    try:
        token = zk.exists("%s/%s" % (PATH, lock.node)).czxid
    except Exception as e:
        log("failed reading our node: %s" % type(e).__name__)
        try:
            lock.release()
        except Exception:
            pass
        continue
    log("granted %d" % token)
    holding.set()
    if zk.state != KazooState.CONNECTED:  # a change before holding was set went unprinted
        log("suspended")
    sticky = stick.is_set()
    stick.clear()
    deadline = time.monotonic() + (60.0 if sticky else HOLD_MS / 1000.0)
    while not lost.is_set() and time.monotonic() < deadline and (sticky or not stop.is_set()):
        time.sleep(0.005)
    holding.clear()
    if not lost.is_set():
        log("released")
    try:
        lock.release()
    except Exception as e:
        if not lost.is_set():
            log("note release %s" % type(e).__name__)
    time.sleep(PAUSE_MS / 1000.0)
zk.stop()
zk.close()
