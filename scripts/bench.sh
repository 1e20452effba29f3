#!/usr/bin/env bash
# The project's benchmark command. Installs what the peers need when it is missing
# (scripts/install-deps.sh: ZooKeeper, Curator 5.4's jars and a JDK, Debian's kazoo and the
# newest kazoo from PyPI in <target>/kazoo-venv), then:
#
#   scripts/bench.sh [compare]   zklock, the bare-client floor, zookeeper-client's Client::lock,
#                                Curator and kazoo side by side (3-10 minutes); rewrites
#                                BENCHMARKS.md's first section and the SVG charts in
#                                adapters/zookeeper-client/benches/charts/
#   scripts/bench.sh memory      RSS and CPU per held lock and per waiting acquisition at
#                                10,000 and 100,000 (1 and 100 sessions); rewrites
#                                BENCHMARKS.md's memory section (long: 40+ minutes with
#                                100,000; MEMORY_COUNTS=10000 takes ~15)
#   scripts/bench.sh fleet       1,000 and 10,000 sessions over worker processes on a 3-node
#                                ensemble, each also with a rolling restart, then the
#                                yardstick (zklock against bare zookeeper-client sessions
#                                at the ensemble's limit); checks that no two holders
#                                overlapped and no session expired; rewrites BENCHMARKS.md's
#                                fleet section and fleet/charts/fleet.svg (~35 minutes)
#   scripts/bench.sh queues      lock-sim: work per release against queue length (prints
#                                a table; 100,000 clients, ~5 minutes, 6 GB)
#   scripts/bench.sh tolerance   how long a held lock survives server restarts (standalone,
#                                follower, leader) and client cuts of 0.5, 0.8 and 1.5 session
#                                timeouts: zklock (both bindings), Curator and kazoo side by
#                                side (prints a table; ~10 minutes; root, network namespaces)
#
# Knobs are environment variables, listed in adapters/zookeeper-client/benches/compare/main.rs
# (COMPARE_ROUNDS, COMPARE_LIBRARIES, CONTENTION_MS, HERD_WAITERS, MEMORY_COUNTS, ...) and
# adapters/sim/benches/queues.rs (QUEUES_CLIENTS, QUEUES_LOCKS), partition/benches/tolerance.rs
# (TOLERANCE_OUTAGES, TOLERANCE_TOPOLOGIES, TOLERANCE_LIBRARIES, TOLERANCE_SESSION_MS, TOLERANCE_TICK_MS) and
# fleet/src/main.rs (FLEET_SIZES, FLEET_SECONDS, FLEET_RESTART, FLEET_YARD_SESSIONS, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-compare}"
case "$what" in
    compare)
        bash scripts/install-deps.sh
        COMPARE_WRITE=1 cargo bench -p lock-zookeeper-client --bench compare
        ;;
    memory)
        bash scripts/install-deps.sh
        COMPARE_WRITE=1 COMPARE_ONLY=memory cargo bench -p lock-zookeeper-client --bench compare
        ;;
    queues)
        cargo bench -p lock-sim --bench queues
        ;;
    tolerance)
        bash scripts/install-deps.sh
        cargo bench -p lock-partition --bench tolerance
        ;;
    fleet)
        bash scripts/install-deps.sh
        cargo build --release -p lock-fleet
        FLEET_WRITE=1 "${CARGO_TARGET_DIR:-target}/release/zklock-fleet" suite
        ;;
    *)
        echo "usage: scripts/bench.sh [compare|memory|queues|tolerance|fleet]" >&2
        exit 2
        ;;
esac
