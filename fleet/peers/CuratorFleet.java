// A fleet worker of Apache Curator's InterProcessMutex for zklock's fleet harness
// (fleet/src/coord.rs starts it; the protocol and the record lines are fleet/src/worker.rs's
// and fleet/src/record.rs's).
//
// Usage: java -cp <classes>:<Curator and ZooKeeper jars> CuratorFleet key=value...
//
// One CuratorFramework (one ZooKeeper session) per fleet session and one thread per
// session running the fleet mix. Times are System.nanoTime(), which is CLOCK_MONOTONIC on
// Linux: the clock every worker process shares. A hold's trusted span ends at SUSPENDED or
// LOST (Curator's own advice: a lock holder must assume it lost the lock at SUSPENDED) and
// starts again at RECONNECTED.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryForever;

public class CuratorFleet {
    static Map<String, String> spec = new HashMap<>();
    static volatile int phase = 0; // 0 waiting, 1 running, 2 stopped
    static final Object phaseLock = new Object();
    static final ConcurrentLinkedQueue<String> records = new ConcurrentLinkedQueue<>();

    static long num(String key) {
        String v = spec.get(key);
        if (v == null) throw new IllegalArgumentException("missing " + key + "=");
        return Long.parseLong(v);
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Sleeps up to ms, less if the run stops; false if it stopped. */
    static boolean pause(long ms) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000L;
        synchronized (phaseLock) {
            while (phase == 1) {
                long left = (end - System.nanoTime()) / 1_000_000L;
                if (left <= 0) return true;
                phaseLock.wait(left);
            }
        }
        return false;
    }

    /** A session's state the connection listener and the loop share. */
    static class Session {
        final int global;
        final CuratorFramework client;
        // The current hold's trusted spans, and when the open one started (-1: none).
        List<long[]> segments;
        long trustedSince = -1;
        Session(int global, CuratorFramework client) {
            this.global = global;
            this.client = client;
        }
        synchronized void stateChanged(ConnectionState state) {
            long now = System.nanoTime();
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                if (segments != null && trustedSince >= 0) {
                    segments.add(new long[] {trustedSince, now});
                    trustedSince = -1;
                }
                if (state == ConnectionState.LOST) {
                    fault(global, "expired-holding-or-waiting", "LOST");
                }
            } else if (state == ConnectionState.RECONNECTED && segments != null && trustedSince < 0) {
                trustedSince = now;
            }
        }
    }

    static void fault(int session, String kind, String detail) {
        records.add("F " + session + " " + System.nanoTime() + " " + kind + " " + detail.replace('\n', ' '));
    }

    static double exponential(SplittableRandom rng, double mean) {
        return -Math.log(1.0 - rng.nextDouble()) * mean;
    }

    static void runSession(Session s) throws Exception {
        synchronized (phaseLock) {
            while (phase == 0) phaseLock.wait();
        }
        if (phase != 1) return;
        long seed = num("seed") ^ (s.global * 0x9e3779b97f4a7c15L);
        SplittableRandom rng = new SplittableRandom(seed);
        boolean hot = s.global < num("hot_sessions");
        if (!hot && !pause((long) (rng.nextDouble() * num("think_ms")))) return;
        while (phase == 1) {
            String lock = hot ? "/fleet/hot/" + (s.global % num("hot_locks"))
                    : "/fleet/cold/" + rng.nextInt((int) num("cold_locks"));
            long holdMs = hot ? num("hot_hold_ms") : (long) exponential(rng, num("hold_ms"));
            InterProcessMutex mutex = new InterProcessMutex(s.client, lock);
            long requested = System.nanoTime();
            boolean got;
            try {
                got = mutex.acquire(num("acquire_timeout_ms"), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                fault(s.global, "acquire-error", lock + ": " + e);
                Thread.sleep(100);
                continue;
            }
            if (!got) {
                fault(s.global, "acquire-timeout", lock);
                continue;
            }
            long granted = System.nanoTime();
            synchronized (s) {
                s.segments = new ArrayList<>();
                s.trustedSince = s.client.getZookeeperClient().isConnected() ? granted : -1;
            }
            Thread.sleep(holdMs);
            long released = System.nanoTime();
            StringBuilder line = new StringBuilder();
            synchronized (s) {
                if (s.trustedSince >= 0) s.segments.add(new long[] {s.trustedSince, released});
                line.append("H ").append(lock).append(hot ? " 1 " : " 0 ").append(s.global).append(' ')
                        .append(requested).append(' ').append(granted).append(' ').append(released).append(' ');
                if (s.segments.isEmpty()) line.append('-');
                for (int i = 0; i < s.segments.size(); i++) {
                    if (i > 0) line.append(';');
                    line.append(s.segments.get(i)[0]).append('-').append(s.segments.get(i)[1]);
                }
                s.segments = null;
                s.trustedSince = -1;
            }
            records.add(line.toString());
            try {
                mutex.release();
            } catch (Exception e) {
                fault(s.global, "release-error", lock + ": " + e);
            }
            long think = hot ? rng.nextLong(num("hot_think_ms") + 1) : (long) exponential(rng, num("think_ms"));
            if (think > 0 && !pause(think)) break;
        }
    }

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            int eq = a.indexOf('=');
            spec.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String mode = spec.get("mode");
        if (!"fleet".equals(mode)) throw new IllegalArgumentException("CuratorFleet runs mode=fleet only, not " + mode);
        int count = (int) num("count");
        int first = (int) num("first");
        int stride = (int) num("stride");
        int timeout = (int) num("session_timeout_ms");
        List<Session> sessions = new ArrayList<>();
        ExecutorService connectors = Executors.newFixedThreadPool(20);
        List<Future<Session>> connecting = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final int global = first + i * stride;
            connecting.add(connectors.submit(() -> {
                CuratorFramework client = CuratorFrameworkFactory.newClient(
                        spec.get("connect"), timeout, 15_000, new RetryForever(100));
                Session s = new Session(global, client);
                client.getConnectionStateListenable().addListener((c, state) -> s.stateChanged(state));
                client.start();
                if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
                    System.err.println("curator worker: session " + global + " did not connect");
                    client.close();
                    return null;
                }
                return s;
            }));
        }
        for (Future<Session> f : connecting) {
            Session s = f.get();
            if (s != null) sessions.add(s);
        }
        connectors.shutdown();
        List<Thread> threads = new ArrayList<>();
        for (Session s : sessions) {
            Thread t = new Thread(() -> {
                try {
                    runSession(s);
                } catch (Exception e) {
                    fault(s.global, "worker-error", e.toString());
                }
            });
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        say("ready " + sessions.size());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.equals("go")) {
                synchronized (phaseLock) { phase = 1; phaseLock.notifyAll(); }
            } else if (line.equals("stop")) {
                break;
            }
        }
        synchronized (phaseLock) { phase = 2; phaseLock.notifyAll(); }
        for (Thread t : threads) t.join();
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Paths.get(spec.get("out"))))) {
            for (String r : records) out.println(r);
        }
        say("done");
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("close")) break;
        }
        for (Session s : sessions) s.client.close();
        System.exit(0);
    }
}
