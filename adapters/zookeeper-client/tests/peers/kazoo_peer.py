# A kazoo 2.8 peer for zklock's interop tests (adapters/zookeeper-client/tests/common/peers.rs
# runs it with Debian's /usr/bin/python3 and python3-kazoo, and drives it).
#
# Usage: python3 kazoo_peer.py <connect string> <name> [session timeout ms, default 10000]
#
# The same line protocol as CuratorPeer.java: one kazoo client (one ZooKeeper session) per
# process; commands on stdin, "<slot> <op> [args...]", each slot a thread of its own that runs
# its commands in order; replies on stdout, "<slot> <WORD> [args...]"; "_ READY" once
# connected; "<slot> ERROR <what>" when a command fails. End of stdin stops the client
# (deleting our ephemeral nodes) and exits.
#
# Ops:
#   acquire <kind> <lock path> [identifier]
#                                -> HELD <node name>      (waits; the identifier is kazoo's,
#                                   written as the node's data)
#   try <kind> <lock path>       -> HELD <node name> | BUSY (acquire(blocking=False))
#   release                      -> RELEASED
#   work <kind> <lock path> <root> <iterations> <sleep ms>
#                                -> WORKED <sections> <overlaps> <ms to the first hold> <ms to the end>
#   elect <election path> <id> <root>
#                                -> LEADER <others> when elected (Election.run; registers as
#                                   <root>/leaders/<id> and counts the other leaders there),
#                                   then the leader function waits for
#   resign                       -> RESIGNED               (leaves <root>/leaders; the leader
#                                   function returns, kazoo deletes the node)
#   status                       -> STATUS leader|follower|none
#   sacquire <path> <permits>    -> LEASED <lease node name> (Semaphore, waits; the peer's
#                                   name is its identifier)
#   stry <path> <permits>        -> LEASED <lease node name> | BUSY | MISMATCH <kazoo's message>
#                                   (acquire(blocking=False); MISMATCH: the ValueError kazoo
#                                   raises when the path's stored max_leases differs)
#   srelease                     -> RELEASED
#   swork <path> <permits> <root> <iterations> <sleep ms>
#                                -> SWORKED <sections> <overlaps> <most inside at once>
#   version                      -> VERSION <kazoo version>
#
# Kinds: mutex (Lock), read (ReadLock), write (WriteLock).
#
# The work loops are the ones CuratorPeer.java describes (register under <root>/inside, look
# for overlaps, non-atomic read-sleep-write of <root>/counter; for a semaphore, count who is
# inside).
#
# On kazoo < 2.9 (Debian bookworm has 2.8.0) the peer replaces Lock._get_predecessor with
# the rule of kazoo 2.9 (see _predecessor_below_us): 2.8's ReadLock deadlocks with any
# writer queued after it, kazoo's own WriteLock included.

import os
import queue
import random
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock
from kazoo.retry import ForceRetryError
from kazoo.version import __version__ as KAZOO_VERSION


def _predecessor_below_us(self, node):
    """The blocking contender right below our node, or None.

    kazoo before 2.9.0 (Debian bookworm ships 2.8.0) does not restrict a ReadLock's
    predecessor to contenders below its own sequence number, so a waiting reader watches
    the LAST writer, even one queued after it, which in turn waits for the reader: a
    deadlock between kazoo's own ReadLock and WriteLock (kazoo issue #649, fixed in
    2.9.0), and between a kazoo reader and any writer queued after it, zklock's included.
    That is kazoo's bug, not an interop question, so the peer runs with the 2.9 rule.
    """
    ours = node[len(self.prefix):]
    names = self.client.get_children(self.path)
    if node not in names:
        raise ForceRetryError()  # our node is gone (session loss): start over
    below = []
    for name in names:
        match = self._contenders_re.search(name)
        if match is not None and match.group(1) < ours:
            below.append((match.group(1), name))
    return max(below)[1] if below else None


if tuple(int(p) for p in KAZOO_VERSION.split(".")[:2]) < (2, 9):
    Lock._get_predecessor = _predecessor_below_us
    sys.stderr.write("kazoo %s: ReadLock predecessor fix of kazoo 2.9 applied\n" % KAZOO_VERSION)

WAIT_SECONDS = 60
NAME = sys.argv[2]
SESSION_MS = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
zk = KazooClient(hosts=sys.argv[1], timeout=SESSION_MS / 1000.0)
zk.start(timeout=30)
out = threading.Lock()


def say(line):
    with out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def new_lock(kind, path, ident=None):
    if kind == "mutex":
        return zk.Lock(path, ident)
    if kind == "read":
        return zk.ReadLock(path, ident)
    if kind == "write":
        return zk.WriteLock(path, ident)
    raise ValueError("unknown lock kind " + kind)


class Slot(object):
    def __init__(self, ident):
        self.id = ident
        self.queue = queue.Queue()
        self.held = None
        self.election = None
        self.leading = False
        t = threading.Thread(target=self.run, name="slot-" + ident)
        t.daemon = True
        t.start()

    def reply(self, words):
        say(self.id + " " + words)

    def status(self):
        if self.election is None:
            return "none"
        return "leader" if self.leading else "follower"

    def run(self):
        while True:
            cmd = self.queue.get()
            try:
                self.execute(cmd)
            except Exception as e:  # reported, the slot goes on
                self.reply("ERROR %s: %r" % (" ".join(cmd), e))

    def execute(self, cmd):
        op = cmd[1]
        if op == "acquire":
            lock = new_lock(cmd[2], cmd[3], cmd[4] if len(cmd) > 4 else None)
            if not lock.acquire(timeout=WAIT_SECONDS):
                raise RuntimeError("not acquired within %d s" % WAIT_SECONDS)
            self.held = lock
            self.reply("HELD " + lock.node)
        elif op == "try":
            lock = new_lock(cmd[2], cmd[3])
            if lock.acquire(blocking=False):
                self.held = lock
                self.reply("HELD " + lock.node)
            else:
                self.reply("BUSY")
        elif op == "release":
            self.held.release()
            self.held = None
            self.reply("RELEASED")
        elif op == "work":
            self.work(cmd[2], cmd[3], cmd[4], int(cmd[5]), int(cmd[6]))
        elif op == "sacquire":
            sem = zk.Semaphore(cmd[2], NAME, max_leases=int(cmd[3]))
            if not sem.acquire(timeout=WAIT_SECONDS):
                raise RuntimeError("no lease within %d s" % WAIT_SECONDS)
            self.held = sem
            self.reply("LEASED " + sem.create_path.rsplit("/", 1)[1])
        elif op == "stry":
            sem = zk.Semaphore(cmd[2], NAME, max_leases=int(cmd[3]))
            try:
                got = sem.acquire(blocking=False)
            except ValueError as e:
                self.reply("MISMATCH " + str(e).replace(" ", "_"))
                return
            if got:
                self.held = sem
                self.reply("LEASED " + sem.create_path.rsplit("/", 1)[1])
            else:
                self.reply("BUSY")
        elif op == "srelease":
            self.held.release()
            self.held = None
            self.reply("RELEASED")
        elif op == "swork":
            self.semaphore_work(cmd[2], int(cmd[3]), cmd[4], int(cmd[5]), int(cmd[6]))
        elif op == "version":
            self.reply("VERSION " + KAZOO_VERSION)
        elif op == "elect":
            self.election = zk.Election(cmd[2], cmd[3])
            self.election.run(self.lead, cmd[4] + "/leaders", cmd[3])
            self.reply("RESIGNED")
        else:
            raise ValueError("unknown op " + op)

    def lead(self, leaders, ident):
        self.leading = True
        mark = leaders + "/" + ident
        zk.create(mark, b"")
        self.reply("LEADER %d" % (len(zk.get_children(leaders)) - 1))
        cmd = self.queue.get()
        if cmd[1] != "resign":
            self.reply("ERROR expected resign, got " + " ".join(cmd))
        zk.delete(mark)
        self.leading = False

    def semaphore_work(self, path, permits, root, iterations, sleep_ms):
        inside = root + "/inside"
        overlaps = 0
        most = 0
        for i in range(iterations):
            # A fresh Semaphore object per section, like a fresh lock object.
            sem = zk.Semaphore(path, NAME, max_leases=permits)
            if not sem.acquire(timeout=WAIT_SECONDS):
                raise RuntimeError("section %d not leased within %d s" % (i, WAIT_SECONDS))
            mark = "s-kazoo-%s-%s-%d" % (NAME, self.id, i)
            zk.create(inside + "/" + mark, b"", ephemeral=True)
            count = len(zk.get_children(inside))
            most = max(most, count)
            if count > permits:
                overlaps += 1
            time.sleep(sleep_ms / 1000.0)
            zk.delete(inside + "/" + mark)
            sem.release()
            time.sleep(random.uniform(0, sleep_ms / 1000.0))
        self.reply("SWORKED %d %d %d" % (iterations, overlaps, most))

    def work(self, kind, path, root, iterations, sleep_ms):
        writer = kind != "read"
        counter = root + "/counter"
        inside = root + "/inside"
        overlaps = 0
        start = time.monotonic()
        first_held = None
        for i in range(iterations):
            # A kazoo lock object is good for one acquisition at a time; a fresh one per
            # section, like a fresh Curator acquisition.
            lock = new_lock(kind, path)
            if not lock.acquire(timeout=WAIT_SECONDS):
                raise RuntimeError("section %d not acquired within %d s" % (i, WAIT_SECONDS))
            if first_held is None:
                first_held = time.monotonic()
            mark = "%s-kazoo-%s-%s-%d" % ("w" if writer else "r", NAME, self.id, i)
            zk.create(inside + "/" + mark, b"", ephemeral=True)
            overlap = False
            for other in zk.get_children(inside):
                if other != mark and (writer or other.startswith("w-")):
                    overlap = True
            value = int(zk.get(counter)[0].decode())
            time.sleep(sleep_ms / 1000.0)
            if writer:
                zk.set(counter, str(value + 1).encode())
            elif int(zk.get(counter)[0].decode()) != value:
                overlap = True
            if overlap:
                overlaps += 1
            zk.delete(inside + "/" + mark)
            lock.release()
            # Think time, so that queues drain and refill instead of marching in step.
            time.sleep(random.uniform(0, sleep_ms / 1000.0))
        end = time.monotonic()
        self.reply("WORKED %d %d %d %d" % (iterations, overlaps, (first_held - start) * 1000, (end - start) * 1000))


def main():
    slots = {}
    say("_ READY")
    for line in sys.stdin:
        words = line.split()
        if len(words) < 2:
            say("_ ERROR bad command: " + line.strip())
            continue
        slot = slots.get(words[0])
        if slot is None:
            slot = slots[words[0]] = Slot(words[0])
        if words[1] == "status":
            slot.reply("STATUS " + slot.status())
        else:
            slot.queue.put(words)
    zk.stop()
    zk.close()
    os._exit(0)


main()
