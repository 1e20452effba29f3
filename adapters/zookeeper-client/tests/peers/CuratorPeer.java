// A Curator 5.4 peer for zklock's interop tests (adapters/zookeeper-client/tests/common/peers.rs
// compiles it with javac at test time against Debian's jars in /usr/share/java, and drives it).
//
// Usage: java CuratorPeer <connect string> <name> [session timeout ms, default 10000]
//
// One Curator client (one ZooKeeper session) per process. Commands arrive on stdin, one a
// line: "<slot> <op> [args...]". Each slot is a thread of its own that runs its commands in
// order, so one slot can wait for a lock while others go on. Replies go to stdout, one a
// line: "<slot> <WORD> [args...]"; "_ READY" once connected; "<slot> ERROR <what>" when a
// command fails. End of stdin closes the client (deleting our ephemeral nodes) and exits, so
// the peer never outlives the test that started it.
//
// Ops:
//   acquire <kind> <lock path>   -> HELD <node name>      (waits; kinds below)
//   try <kind> <lock path>       -> HELD <node name> | BUSY (one look, Curator's acquire(0))
//   release                      -> RELEASED
//   revoke <node path>           -> REVOKE_SENT            (Revoker.attemptRevoke)
//   work <kind> <lock path> <root> <iterations> <sleep ms>
//                                -> WORKED <sections> <overlaps> <ms to the first hold> <ms to the end>
//   elect <latch path> <id> <root>
//                                -> LEADER <others> when the slot's LeaderLatch is elected
//                                   (it registers as <root>/leaders/<id> and counts the
//                                   other leaders registered there: anything but 0 is two
//                                   leaders at once)
//   resign                       -> RESIGNED               (leaves <root>/leaders, closes
//                                   the LeaderLatch)
//   status                       -> STATUS leader|follower|none (LeaderLatch.hasLeadership)
//   sacquire <path> <permits>    -> LEASED <lease node name> (InterProcessSemaphoreV2, waits)
//   stry <path> <permits>        -> LEASED <lease node name> | BUSY (acquire(0 ms))
//   smutex <path>                -> LEASED <lease node name> (InterProcessSemaphoreMutex, waits)
//   srelease                     -> RELEASED               (returns the lease / releases)
//   swork <path> <permits> <root> <iterations> <sleep ms>
//                                -> SWORKED <sections> <overlaps> <most inside at once>
//
// Kinds: mutex (InterProcessMutex), revocable (an InterProcessMutex made revocable: its
// listener prints "<slot> REVOCATION_REQUESTED"), read / write (the halves of an
// InterProcessReadWriteLock).
//
// The work loop is the interop tests' counter workload: take the lock, register under
// <root>/inside (ephemeral "w-..." for an exclusive holder, "r-..." for a reader) and look
// at who else is in (any other node for a writer, any "w-" for a reader: an overlap), then
// a writer reads <root>/counter, sleeps and writes value+1 unconditionally, a reader reads
// it twice across the sleep (a change is an overlap); leave, release.
//
// The semaphore loop (swork) is the same with <permits> holders allowed: each holder
// registers "s-..." under <root>/inside and counts who is in; more than <permits> is an
// overlap (of n+1 holders at once, the last to register sees n+1), and the most seen is
// reported.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;

public class CuratorPeer {
    static final long WAIT_SECONDS = 60;
    static CuratorFramework client;
    static String name;
    static final Map<String, Slot> slots = new ConcurrentHashMap<>();

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        name = args[1];
        int sessionMs = args.length > 2 ? Integer.parseInt(args[2]) : 10_000;
        client = CuratorFrameworkFactory.newClient(args[0], sessionMs, 15_000, new RetryNTimes(3, 200));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            say("_ ERROR not connected to " + args[0] + " within 30 s");
            System.exit(2);
        }
        say("_ READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words.length < 2) {
                say("_ ERROR bad command: " + line);
                continue;
            }
            Slot slot = slots.computeIfAbsent(words[0], Slot::new);
            if (words[1].equals("status")) {
                say(slot.id + " STATUS " + slot.status());
            } else {
                slot.queue.add(words);
            }
        }
        client.close();
        System.exit(0);
    }

    // The node a Curator lock created: InterProcessMutex.getLockPath() is protected.
    static String nodeName(InterProcessMutex lock) throws Exception {
        Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        m.setAccessible(true);
        String path = (String) m.invoke(lock);
        return path.substring(path.lastIndexOf('/') + 1);
    }

    static class Slot implements Runnable {
        final String id;
        final LinkedBlockingQueue<String[]> queue = new LinkedBlockingQueue<>();
        final ExecutorService callbacks = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        InterProcessMutex held;
        Lease lease;
        InterProcessSemaphoreMutex semaphoreMutex;
        volatile LeaderLatch latch;
        volatile String leaderMark;

        Slot(String id) {
            this.id = id;
            Thread t = new Thread(this, "slot-" + id);
            t.setDaemon(true);
            t.start();
        }

        String status() {
            LeaderLatch l = latch;
            if (l == null) return "none";
            return l.hasLeadership() ? "leader" : "follower";
        }

        void reply(String words) {
            say(id + " " + words);
        }

        public void run() {
            while (true) {
                String[] cmd;
                try {
                    cmd = queue.take();
                } catch (InterruptedException e) {
                    return;
                }
                try {
                    execute(cmd);
                } catch (Throwable e) {
                    reply("ERROR " + String.join(" ", cmd) + ": " + e.toString().replace('\n', ' '));
                }
            }
        }

        InterProcessMutex newLock(String kind, String path) {
            switch (kind) {
                case "mutex":
                    return new InterProcessMutex(client, path);
                case "revocable": {
                    InterProcessMutex lock = new InterProcessMutex(client, path);
                    lock.makeRevocable(forLock -> reply("REVOCATION_REQUESTED"), callbacks);
                    return lock;
                }
                case "read":
                    return new InterProcessReadWriteLock(client, path).readLock();
                case "write":
                    return new InterProcessReadWriteLock(client, path).writeLock();
                default:
                    throw new IllegalArgumentException("unknown lock kind " + kind);
            }
        }

        void execute(String[] cmd) throws Exception {
            switch (cmd[1]) {
                case "acquire": {
                    InterProcessMutex lock = newLock(cmd[2], cmd[3]);
                    if (!lock.acquire(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("not acquired within " + WAIT_SECONDS + " s");
                    }
                    held = lock;
                    reply("HELD " + nodeName(lock));
                    break;
                }
                case "try": {
                    InterProcessMutex lock = newLock(cmd[2], cmd[3]);
                    if (lock.acquire(0, TimeUnit.MILLISECONDS)) {
                        held = lock;
                        reply("HELD " + nodeName(lock));
                    } else {
                        reply("BUSY");
                    }
                    break;
                }
                case "release":
                    held.release();
                    held = null;
                    reply("RELEASED");
                    break;
                case "sacquire": {
                    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, cmd[2], Integer.parseInt(cmd[3]));
                    lease = semaphore.acquire(WAIT_SECONDS, TimeUnit.SECONDS);
                    if (lease == null) {
                        throw new IllegalStateException("no lease within " + WAIT_SECONDS + " s");
                    }
                    reply("LEASED " + lease.getNodeName());
                    break;
                }
                case "stry": {
                    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, cmd[2], Integer.parseInt(cmd[3]));
                    lease = semaphore.acquire(0, TimeUnit.MILLISECONDS);
                    reply(lease == null ? "BUSY" : "LEASED " + lease.getNodeName());
                    break;
                }
                case "smutex": {
                    InterProcessSemaphoreMutex mutex = new InterProcessSemaphoreMutex(client, cmd[2]);
                    if (!mutex.acquire(WAIT_SECONDS, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("not acquired within " + WAIT_SECONDS + " s");
                    }
                    semaphoreMutex = mutex;
                    List<String> leases = client.getChildren().forPath(cmd[2] + "/leases");
                    reply("LEASED " + String.join(",", leases));
                    break;
                }
                case "srelease":
                    if (semaphoreMutex != null) {
                        semaphoreMutex.release();
                        semaphoreMutex = null;
                    } else {
                        lease.close();
                        lease = null;
                    }
                    reply("RELEASED");
                    break;
                case "swork":
                    semaphoreWork(cmd[2], Integer.parseInt(cmd[3]), cmd[4], Integer.parseInt(cmd[5]), Integer.parseInt(cmd[6]));
                    break;
                case "revoke":
                    Revoker.attemptRevoke(client, cmd[2]);
                    reply("REVOKE_SENT");
                    break;
                case "work":
                    work(cmd[2], cmd[3], cmd[4], Integer.parseInt(cmd[5]), Integer.parseInt(cmd[6]));
                    break;
                case "elect": {
                    LeaderLatch l = new LeaderLatch(client, cmd[2], cmd[3]);
                    String leaders = cmd[4] + "/leaders";
                    leaderMark = leaders + "/" + cmd[3];
                    l.addListener(new LeaderLatchListener() {
                        public void isLeader() {
                            try {
                                client.create().forPath(leaderMark, new byte[0]);
                                int others = client.getChildren().forPath(leaders).size() - 1;
                                reply("LEADER " + others);
                            } catch (Exception e) {
                                reply("ERROR registering the leader: " + e);
                            }
                        }

                        public void notLeader() {}
                    }, callbacks);
                    latch = l;
                    l.start();
                    break;
                }
                case "resign":
                    client.delete().forPath(leaderMark);
                    latch.close();
                    reply("RESIGNED");
                    break;
                default:
                    throw new IllegalArgumentException("unknown op " + cmd[1]);
            }
        }

        void semaphoreWork(String path, int permits, String root, int iterations, int sleepMs) throws Exception {
            String inside = root + "/inside";
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, permits);
            int overlaps = 0;
            int most = 0;
            for (int i = 0; i < iterations; i++) {
                Lease l = semaphore.acquire(WAIT_SECONDS, TimeUnit.SECONDS);
                if (l == null) {
                    throw new IllegalStateException("section " + i + " not leased within " + WAIT_SECONDS + " s");
                }
                String mark = "s-curator-" + name + "-" + id + "-" + i;
                client.create().withMode(CreateMode.EPHEMERAL).forPath(inside + "/" + mark, new byte[0]);
                int in = client.getChildren().forPath(inside).size();
                most = Math.max(most, in);
                if (in > permits) overlaps++;
                Thread.sleep(sleepMs);
                client.delete().forPath(inside + "/" + mark);
                l.close();
                Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextInt(sleepMs + 1));
            }
            reply("SWORKED " + iterations + " " + overlaps + " " + most);
        }

        void work(String kind, String path, String root, int iterations, int sleepMs) throws Exception {
            boolean writer = !kind.equals("read");
            String counter = root + "/counter";
            String inside = root + "/inside";
            long start = System.nanoTime();
            long firstHeld = -1;
            InterProcessMutex lock = newLock(kind, path);
            int overlaps = 0;
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(WAIT_SECONDS, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("section " + i + " not acquired within " + WAIT_SECONDS + " s");
                }
                if (firstHeld < 0) firstHeld = System.nanoTime();
                String mark = (writer ? "w-" : "r-") + "curator-" + name + "-" + id + "-" + i;
                client.create().withMode(CreateMode.EPHEMERAL).forPath(inside + "/" + mark, new byte[0]);
                boolean overlap = false;
                List<String> others = client.getChildren().forPath(inside);
                for (String other : others) {
                    if (!other.equals(mark) && (writer || other.startsWith("w-"))) {
                        overlap = true;
                    }
                }
                long value = Long.parseLong(new String(client.getData().forPath(counter), StandardCharsets.UTF_8));
                Thread.sleep(sleepMs);
                if (writer) {
                    client.setData().forPath(counter, Long.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                } else {
                    long again = Long.parseLong(new String(client.getData().forPath(counter), StandardCharsets.UTF_8));
                    if (again != value) overlap = true;
                }
                if (overlap) overlaps++;
                client.delete().forPath(inside + "/" + mark);
                lock.release();
                // Think time, so that queues drain and refill instead of marching in step.
                Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextInt(sleepMs + 1));
            }
            long end = System.nanoTime();
            reply("WORKED " + iterations + " " + overlaps + " " + (firstHeld - start) / 1_000_000 + " " + (end - start) / 1_000_000);
        }
    }
}
