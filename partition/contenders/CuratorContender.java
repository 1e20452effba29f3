// A Curator 5.4 contender for zklock's partition tests (partition/src/contenders.rs
// compiles it with javac against Debian's jars in /usr/share/java and runs it in a network
// namespace).
//
// Usage: java CuratorContender <connect string> <lock path> <name> <session timeout ms>
//                              <hold ms> <pause ms>
//
// Takes the InterProcessMutex at <lock path> again and again, holding it <hold ms> each
// time, and prints a history line per event on stdout (the format of
// partition/src/history.rs): "<System.nanoTime()> <name> <lock path> <event> [arg]", with
// the events acquire-request, granted <czxid of our lock node>, suspended, resumed,
// lost <state>, released (printed when we decide to let go, before the delete). suspended,
// resumed and lost are Curator's connection states SUSPENDED, RECONNECTED and LOST while
// we hold the lock; after LOST the lock counts as lost. System.nanoTime() is
// CLOCK_MONOTONIC on Linux, the clock of every other contender.
//
// Stdin: "stick" makes the next hold last until LOST (at most 60 s); end of input stops:
// the lock is released, the client closed, the JVM exits.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryForever;

public class CuratorContender {
    static String prefix;
    static final AtomicBoolean stick = new AtomicBoolean();
    static final AtomicBoolean stop = new AtomicBoolean();
    static volatile boolean holding;
    static volatile boolean lost;

    static synchronized void log(String event) {
        System.out.println(System.nanoTime() + " " + prefix + " " + event);
        System.out.flush();
    }

    // The node a Curator lock created: InterProcessMutex.getLockPath() is protected.
    static String lockPath(InterProcessMutex lock) throws Exception {
        Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        m.setAccessible(true);
        return (String) m.invoke(lock);
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1];
        prefix = args[2] + " " + path;
        int sessionMs = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]), pauseMs = Long.parseLong(args[5]);
        CuratorFramework client =
            CuratorFrameworkFactory.newClient(connect, sessionMs, sessionMs, new RetryForever(200));
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (!holding) return;
            if (state == ConnectionState.SUSPENDED) log("suspended");
            else if (state == ConnectionState.RECONNECTED) log("resumed");
            else if (state == ConnectionState.LOST) {
                lost = true;
                log("lost LOST");
            }
        });
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            log("failed connect: not connected within 30 s");
            System.exit(1);
        }
        Thread input = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("stick")) stick.set(true);
                }
            } catch (Exception e) {
                // End of input either way.
            }
            stop.set(true);
        });
        input.setDaemon(true);
        input.start();
        log("ready");
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        while (!stop.get()) {
            log("acquire-request");
            boolean got;
            try {
                got = mutex.acquire(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                log("failed " + e.getClass().getSimpleName());
                Thread.sleep(pauseMs);
                continue;
            }
            if (!got) {
                log("failed timeout");
                continue;
            }
            lost = false;
            long token;
            try {
                token = client.checkExists().forPath(lockPath(mutex)).getCzxid();
            } catch (Exception e) {
                log("failed reading our node: " + e.getClass().getSimpleName());
                try { mutex.release(); } catch (Exception ignored) { }
                continue;
            }
            log("granted " + token);
            holding = true;
            if (!client.getZookeeperClient().isConnected()) log("suspended"); // a change before holding was set went unprinted
            boolean sticky = stick.getAndSet(false);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(sticky ? 60_000 : holdMs);
            while (!lost && System.nanoTime() < deadline && (sticky || !stop.get())) {
                Thread.sleep(5);
            }
            holding = false;
            if (!lost) log("released");
            try {
                mutex.release();
            } catch (Exception e) {
                if (!lost) log("note release " + e.getClass().getSimpleName());
            }
            Thread.sleep(pauseMs);
        }
        client.close();
        System.exit(0);
    }
}
