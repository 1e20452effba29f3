// Curator 5.4's InterProcessMutex for zklock's side-by-side bench (benches/compare: it compiles
// this with javac against Debian's jars in /usr/share/java and drives it line by line).
//
// Usage: java CuratorBench <connect string> <sessions> <session timeout ms>
//
// Opens <sessions> CuratorFramework clients (one ZooKeeper session each), prints "ready",
// then runs one command per stdin line and answers each with one line ("ok ..." or
// "err <what>"). Every time is measured here, with System.nanoTime(), so the JVM's start and
// the pipe do not count. The protocol is the one of benches/compare/peer.rs:
//
//   cycles <path> <n>          n acquire + release cycles on session 0's InterProcessMutex
//                              -> ok <acquire ns,...> <release ns,...>
//   contend <path> <ms>        one thread per session loops acquire + release for <ms>
//                              -> ok <acquisitions> <elapsed ns>
//   many <dir> <locks> <n>     session 0, one thread per lock <dir>/l<i> doing n cycles
//                              -> ok <elapsed ns>
//   hold <dir> <n>             acquires <dir>/l0 .. l<n-1> (lock i on session i % sessions),
//                              keeps them -> ok <elapsed ns>
//   wait <dir> <n>             starts n acquisitions of <dir>/l<i> (held elsewhere), one
//                              thread each, and answers at once -> ok
//   herd <path>                session 0 holds <path>; sessions 1.. each start one
//                              acquisition (acquire, note the time, release) -> ok
//   go                         session 0 releases; waits for the herd -> ok <elapsed ns>
//                              <ns after the release at which each waiter held, sorted>
//   quit                       closes every client and exits

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryForever;

public class CuratorBench {
    static CuratorFramework[] clients;
    static final List<Thread> waiters = new ArrayList<>();
    // hold: InterProcessMutex is owned by the thread that acquired it, so the holders are
    // threads that keep their locks until quit.
    static final int HOLD_THREADS = 32;
    static InterProcessMutex herdHolder;
    static long[] herdDone;
    static CountDownLatch herdLatch;
    static volatile long herdStart;

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        int sessions = Integer.parseInt(args[1]);
        int sessionMs = Integer.parseInt(args[2]);
        clients = new CuratorFramework[sessions];
        for (int i = 0; i < sessions; i++) {
            clients[i] = CuratorFrameworkFactory.newClient(connect, sessionMs, sessionMs, new RetryForever(200));
            clients[i].start();
        }
        for (CuratorFramework c : clients) {
            if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            String reply;
            try {
                reply = run(w);
            } catch (Exception e) {
                reply = "err " + e.toString().replace('\n', ' ');
            }
            if (reply == null) break;
            System.out.println(reply);
            System.out.flush();
        }
        for (CuratorFramework c : clients) c.close();
        System.out.println("ok");
        System.out.flush();
        System.exit(0);
    }

    static String run(String[] w) throws Exception {
        switch (w[0]) {
            case "cycles": {
                int n = Integer.parseInt(w[2]);
                InterProcessMutex m = new InterProcessMutex(clients[0], w[1]);
                long[] acq = new long[n], rel = new long[n];
                for (int i = 0; i < n; i++) {
                    long t0 = System.nanoTime();
                    m.acquire();
                    long t1 = System.nanoTime();
                    m.release();
                    acq[i] = t1 - t0;
                    rel[i] = System.nanoTime() - t1;
                }
                return "ok " + csv(acq) + " " + csv(rel);
            }
            case "contend": {
                long ms = Long.parseLong(w[2]);
                AtomicLong count = new AtomicLong();
                long start = System.nanoTime(), end = start + ms * 1_000_000L;
                Thread[] ts = new Thread[clients.length];
                for (int i = 0; i < clients.length; i++) {
                    InterProcessMutex m = new InterProcessMutex(clients[i], w[1]);
                    ts[i] = new Thread(() -> {
                        try {
                            while (System.nanoTime() < end) {
                                m.acquire();
                                count.incrementAndGet();
                                m.release();
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    ts[i].start();
                }
                for (Thread t : ts) t.join();
                return "ok " + count.get() + " " + (System.nanoTime() - start);
            }
            case "many": {
                int locks = Integer.parseInt(w[2]), n = Integer.parseInt(w[3]);
                long start = System.nanoTime();
                Thread[] ts = new Thread[locks];
                for (int i = 0; i < locks; i++) {
                    InterProcessMutex m = new InterProcessMutex(clients[0], w[1] + "/l" + i);
                    ts[i] = new Thread(() -> {
                        try {
                            for (int k = 0; k < n; k++) {
                                m.acquire();
                                m.release();
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    }, "many-" + i);
                    ts[i].start();
                }
                for (Thread t : ts) t.join();
                return "ok " + (System.nanoTime() - start);
            }
            case "hold": {
                int n = Integer.parseInt(w[2]);
                String dir = w[1];
                long start = System.nanoTime();
                CountDownLatch held = new CountDownLatch(HOLD_THREADS);
                for (int k = 0; k < HOLD_THREADS; k++) {
                    final int first = k;
                    Thread t = new Thread(() -> {
                        try {
                            for (int i = first; i < n; i += HOLD_THREADS) {
                                new InterProcessMutex(clients[i % clients.length], dir + "/l" + i).acquire();
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        } finally {
                            held.countDown();
                        }
                        try {
                            Thread.sleep(Long.MAX_VALUE);
                        } catch (InterruptedException e) {
                            // quit
                        }
                    });
                    t.setDaemon(true);
                    t.start();
                }
                held.await();
                return "ok " + (System.nanoTime() - start);
            }
            case "wait": {
                int n = Integer.parseInt(w[2]);
                for (int i = 0; i < n; i++) {
                    InterProcessMutex m = new InterProcessMutex(clients[i % clients.length], w[1] + "/l" + i);
                    Thread t = new Thread(null, () -> {
                        try {
                            m.acquire();
                        } catch (Exception e) {
                            // closed at quit
                        }
                    }, "wait-" + i, 256 * 1024);
                    t.setDaemon(true);
                    t.start();
                    waiters.add(t);
                }
                return "ok";
            }
            case "herd": {
                herdHolder = new InterProcessMutex(clients[0], w[1]);
                herdHolder.acquire();
                int n = clients.length - 1;
                herdDone = new long[n];
                herdLatch = new CountDownLatch(n);
                for (int i = 0; i < n; i++) {
                    final int k = i;
                    InterProcessMutex m = new InterProcessMutex(clients[i + 1], w[1]);
                    Thread t = new Thread(() -> {
                        try {
                            m.acquire();
                            herdDone[k] = System.nanoTime() - herdStart;
                            m.release();
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        } finally {
                            herdLatch.countDown();
                        }
                    });
                    t.setDaemon(true);
                    t.start();
                }
                return "ok";
            }
            case "go": {
                herdStart = System.nanoTime();
                herdHolder.release();
                herdLatch.await();
                long elapsed = System.nanoTime() - herdStart;
                long[] done = herdDone.clone();
                Arrays.sort(done);
                return "ok " + elapsed + " " + csv(done);
            }
            case "quit":
                return null;
            default:
                return "err unknown command " + w[0];
        }
    }

    static String csv(long[] values) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            if (i > 0) b.append(',');
            b.append(values[i]);
        }
        return b.toString();
    }
}
