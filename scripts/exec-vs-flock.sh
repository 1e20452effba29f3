#!/usr/bin/env bash
# `zklock exec -- true` next to `flock(1) FILE true` (and their parts) on one
# loopback ZooKeeper started by lock-testkit, and `exec`, `ls` and `top --once`
# next to their floors (cli/examples/exec_floor.rs: the same ZooKeeper work and
# processes, a guard included, with nothing of zklock's in between): alternating
# rounds, medians of the per-round ratios, the load average noted. Usage: scripts/exec-vs-flock.sh
# [ROUNDS] (default 60). Prints a table for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-60}"
cargo build --quiet --release -p zklock-cli
cargo build --quiet --release -p zklock-cli --example exec_floor
cargo build --quiet -p lock-testkit --example serve
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
work="$(mktemp -d)"
trap 'exec 3>&-; rm -rf "$work"' EXIT
# The server lives as long as fd 3 (its stdin) stays open.
mkfifo "$work/hold"
"$target/debug/examples/serve" < "$work/hold" > "$work/zk" &
exec 3> "$work/hold"
for _ in $(seq 100); do [ -s "$work/zk" ] && break; sleep 0.1; done
ZK="$(head -1 "$work/zk")" ZKLOCK="$target/release/zklock" FLOOR="$target/release/examples/exec_floor" ROUNDS="$rounds" WORK="$work" python3 - <<'PY'
import os, statistics, subprocess, time
zk, zklock, rounds, work = os.environ["ZK"], os.environ["ZKLOCK"], int(os.environ["ROUNDS"]), os.environ["WORK"]
floor = os.environ["FLOOR"]
lockfile = os.path.join(work, "flock")
open(lockfile, "w").close()
cases = {
    "flock FILE true": ["flock", lockfile, "true"],
    "true (a process start)": ["true"],
    "zklock --version (zklock's start)": [zklock, "--version"],
    "zklock ls PATH (start, session, one read, close)": [zklock, "--zk", zk, "ls", "/bench/exec"],
    "ls floor (connect, the listing reads, close)": [floor, "ls", zk, "/bench/exec"],
    "zklock top --once ROOT (start, sessions, the reads, close)": [zklock, "--zk", zk, "top", "--once", "/bench"],
    "top floor (connect, list ROOT, each lock's reads, close)": [floor, "top", zk, "/bench"],
    "zklock exec PATH -- true": [zklock, "--zk", zk, "exec", "/bench/exec", "--", "true"],
    "exec floor (guard, connect, create + list, CMD, delete, close)": [floor, "exec", zk, "/bench/exec-floor", "true"],
}
samples = {name: [] for name in cases}
loads = []
for _ in range(rounds):
    for name, argv in cases.items():
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples[name].append((time.perf_counter() - start) * 1e3)
    loads.append(os.getloadavg()[0])
flock = samples["flock FILE true"]
print(f"{rounds} alternating rounds, load average {min(loads):.1f}-{max(loads):.1f}, {os.cpu_count()} CPUs")
print("| command | p50 | p10 | min | / flock (median of per-round ratios) |")
print("|---|---|---|---|---|")
for name, values in samples.items():
    ratios = sorted(v / f for v, f in zip(values, flock))
    ordered = sorted(values)
    print(f"| `{name}` | {statistics.median(ordered):.2f} ms | {ordered[len(ordered) // 10]:.2f} ms "
          f"| {ordered[0]:.2f} ms | {statistics.median(ratios):.2f} |")
print()
print("| command | / its floor (median of per-round ratios) |")
print("|---|---|")
for name, floor_name in [("zklock exec PATH -- true", "exec floor (guard, connect, create + list, CMD, delete, close)"),
                         ("zklock ls PATH (start, session, one read, close)", "ls floor (connect, the listing reads, close)"),
                         ("zklock top --once ROOT (start, sessions, the reads, close)", "top floor (connect, list ROOT, each lock's reads, close)")]:
    ratios = sorted(v / f for v, f in zip(samples[name], samples[floor_name]))
    print(f"| `{name}` | {statistics.median(ratios):.2f} |")
PY
