// A go-zookeeper peer for zklock's interop tests: lock-testkit's `go_peer` builds it with
// Debian's golang-go and golang-github-samuel-go-zookeeper-dev, in GOPATH mode; the tests of
// lock-zookeeper-client (tests/common/peers/) and of the zklock command drive it.
//
// Usage: go_peer <connect string> <name> [session timeout ms, default 10000]
//
// The same line protocol as CuratorPeer.java and kazoo_peer.py: one go-zookeeper connection
// (one ZooKeeper session) per process; commands on stdin, "<slot> <op> [args...]", each slot a
// goroutine of its own that runs its commands in order; replies on stdout,
// "<slot> <WORD> [args...]"; "_ READY" once the session is established; "<slot> ERROR <what>"
// when a command fails. End of stdin closes the session (deleting our ephemeral nodes) and
// exits.
//
// Ops (go-zookeeper has one recipe, zk.Lock, a mutex: the kind is always "mutex"):
//   acquire mutex <lock path>    -> HELD <node name>          (zk.Lock.Lock, waits)
//   try mutex <lock path>        -> HELD <node name> | BUSY   (go-zookeeper has no try: BUSY when
//                                   the directory has any child, which its Lock would count as
//                                   a participant; else Lock)
//   release                      -> RELEASED
//   work mutex <lock path> <root> <iterations> <sleep ms>
//                                -> WORKED <sections> <overlaps> <ms to the first hold> <ms to the end>
//   pid                          -> PID <process id>
//
// The work loop is the one CuratorPeer.java describes (register under <root>/inside, look for
// overlaps, non-atomic read-sleep-write of <root>/counter), and it also writes the section to
// the interval log: a persistent sequential node <root>/log/e- with data "E <who>" right after
// the lock is taken, and one with "X <who>" right before it is released. The server orders the
// log totally, so the test checks that no section opens before the previous one closed.
package main

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

var (
	conn *zk.Conn
	name string
	out  sync.Mutex
	acl  = zk.WorldACL(zk.PermAll)
)

// How long a lock wait may take before the peer reports an error (the test's own
// timeouts are 60 s).
const waitSeconds = 60

func say(line string) {
	out.Lock()
	defer out.Unlock()
	fmt.Println(line)
}

type slot struct {
	id    string
	cmds  chan []string
	held  *zk.Lock
	fresh *rand.Rand
}

func (s *slot) reply(words string) { say(s.id + " " + words) }

func (s *slot) run() {
	for cmd := range s.cmds {
		if err := s.execute(cmd); err != nil {
			s.reply(fmt.Sprintf("ERROR %s: %v", strings.Join(cmd, " "), err))
		}
	}
}

func lastSegment(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// lockWithin takes lock, failing after waitSeconds (zk.Lock.Lock has no timeout: the
// goroutine is left waiting, and the process is about to be torn down by the failed test).
func lockWithin(lock *zk.Lock) error {
	done := make(chan error, 1)
	go func() { done <- lock.Lock() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitSeconds * time.Second):
		return fmt.Errorf("not acquired within %d s", waitSeconds)
	}
}

// node is the name of the node a held zk.Lock created: go-zookeeper keeps it unexported,
// so it is found in the listing by the sequence number the Lock parsed from it.
func node(path string) (string, error) {
	children, _, err := conn.Children(path)
	if err != nil {
		return "", err
	}
	// The lowest child is ours while we hold (Lock's own rule).
	best, bestSeq := "", -1
	for _, c := range children {
		parts := strings.Split(c, "-")
		seq, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			return "", err
		}
		if bestSeq < 0 || seq < bestSeq {
			best, bestSeq = c, seq
		}
	}
	if best == "" {
		return "", fmt.Errorf("holding, but %s is empty", path)
	}
	return best, nil
}

func (s *slot) execute(cmd []string) error {
	op := cmd[1]
	switch op {
	case "acquire", "try":
		if cmd[2] != "mutex" {
			return fmt.Errorf("go-zookeeper has no %s lock", cmd[2])
		}
		path := cmd[3]
		if op == "try" {
			children, _, err := conn.Children(path)
			if err != nil && err != zk.ErrNoNode {
				return err
			}
			if len(children) > 0 {
				s.reply("BUSY")
				return nil
			}
		}
		lock := zk.NewLock(conn, path, acl)
		if err := lockWithin(lock); err != nil {
			return err
		}
		s.held = lock
		n, err := node(path)
		if err != nil {
			return err
		}
		s.reply("HELD " + n)
	case "release":
		if err := s.held.Unlock(); err != nil {
			return err
		}
		s.held = nil
		s.reply("RELEASED")
	case "work":
		iterations, err := strconv.Atoi(cmd[5])
		if err != nil {
			return err
		}
		sleepMs, err := strconv.Atoi(cmd[6])
		if err != nil {
			return err
		}
		return s.work(cmd[3], cmd[4], iterations, sleepMs)
	case "pid":
		s.reply(fmt.Sprintf("PID %d", os.Getpid()))
	default:
		return fmt.Errorf("unknown op %s", op)
	}
	return nil
}

func (s *slot) work(path, root string, iterations, sleepMs int) error {
	counter, inside, log := root+"/counter", root+"/inside", root+"/log/e-"
	who := fmt.Sprintf("go-%s-%s", name, s.id)
	overlaps := 0
	start := time.Now()
	var firstHeld time.Time
	for i := 0; i < iterations; i++ {
		// A fresh Lock per section, as a fresh Curator acquisition.
		lock := zk.NewLock(conn, path, acl)
		if err := lockWithin(lock); err != nil {
			return fmt.Errorf("section %d: %v", i, err)
		}
		if firstHeld.IsZero() {
			firstHeld = time.Now()
		}
		if _, err := conn.Create(log, []byte("E "+who), zk.FlagSequence, acl); err != nil {
			return err
		}
		mark := fmt.Sprintf("w-go-%s-%s-%d", name, s.id, i)
		if _, err := conn.Create(inside+"/"+mark, []byte{}, zk.FlagEphemeral, acl); err != nil {
			return err
		}
		others, _, err := conn.Children(inside)
		if err != nil {
			return err
		}
		overlap := false
		for _, o := range others {
			if o != mark {
				overlap = true
			}
		}
		data, _, err := conn.Get(counter)
		if err != nil {
			return err
		}
		value, err := strconv.Atoi(string(data))
		if err != nil {
			return err
		}
		time.Sleep(time.Duration(sleepMs) * time.Millisecond)
		if _, err := conn.Set(counter, []byte(strconv.Itoa(value+1)), -1); err != nil {
			return err
		}
		if overlap {
			overlaps++
		}
		if err := conn.Delete(inside+"/"+mark, -1); err != nil {
			return err
		}
		if _, err := conn.Create(log, []byte("X "+who), zk.FlagSequence, acl); err != nil {
			return err
		}
		if err := lock.Unlock(); err != nil {
			return err
		}
		// Think time, so that queues drain and refill instead of marching in step.
		time.Sleep(time.Duration(s.fresh.Intn(sleepMs+1)) * time.Millisecond)
	}
	end := time.Now()
	s.reply(fmt.Sprintf("WORKED %d %d %d %d", iterations, overlaps,
		firstHeld.Sub(start).Milliseconds(), end.Sub(start).Milliseconds()))
	return nil
}

type quiet struct{}

// Printf drops go-zookeeper's connection chatter unless ZKLOCK_GO_PEER_LOG is set: the
// tests print the peer's stderr when something goes wrong, and that chatter would bury it.
func (quiet) Printf(format string, args ...interface{}) {
	if os.Getenv("ZKLOCK_GO_PEER_LOG") != "" {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go_peer <connect string> <name> [session timeout ms]")
		os.Exit(2)
	}
	name = os.Args[2]
	sessionMs := 10000
	if len(os.Args) > 3 {
		v, err := strconv.Atoi(os.Args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, "session timeout:", err)
			os.Exit(2)
		}
		sessionMs = v
	}
	c, events, err := zk.Connect(strings.Split(os.Args[1], ","),
		time.Duration(sessionMs)*time.Millisecond, zk.WithLogger(quiet{}))
	if err != nil {
		say("_ ERROR connect: " + err.Error())
		os.Exit(1)
	}
	conn = c
	deadline := time.After(waitSeconds * time.Second)
	for established := false; !established; {
		select {
		case ev := <-events:
			established = ev.State == zk.StateHasSession
		case <-deadline:
			say("_ ERROR no session within 60 s")
			os.Exit(1)
		}
	}
	go func() {
		for range events {
		}
	}()
	say("_ READY")
	slots := map[string]*slot{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		words := strings.Fields(in.Text())
		if len(words) < 2 {
			say("_ ERROR bad command: " + in.Text())
			continue
		}
		s := slots[words[0]]
		if s == nil {
			seed := time.Now().UnixNano() + int64(len(slots))
			s = &slot{id: words[0], cmds: make(chan []string, 16), fresh: rand.New(rand.NewSource(seed))}
			slots[words[0]] = s
			go s.run()
		}
		s.cmds <- words
	}
	conn.Close()
	os.Exit(0)
}
