#!/usr/bin/env bash
# CI as a busy machine runs it: RUNS times (default 3), a fresh clone of HEAD each
# time, `.ci/run` in it while LOAD extra processes (default 2) keep the CPUs busy.
# A timing-dependent test that survives this survives CI. Prints one line per run
# (passed/failed, minutes, load average) and keeps each run's log.
#
# Usage: scripts/ci-under-load.sh [RUNS] [LOAD]
# Environment: CI_LOAD_TARGET=DIR builds every run into DIR (default: each clone's
# own target/, a build from scratch as on a fresh machine).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3} load=${2:-2}
commit=$(git rev-parse HEAD)
logs=$(mktemp -d "${TMPDIR:-/tmp}/zklock-ci-load.XXXXXX")
busy=()
stop_load() { for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_load EXIT
for _ in $(seq "$load"); do
    # A CPU-bound process that never sleeps.
    sh -c 'while :; do :; done' &
    busy+=($!)
done
echo "ci-under-load: $runs run(s) of .ci/run at ${commit:0:12} with $load busy processes; logs in $logs"
failed=0
for run in $(seq "$runs"); do
    clone="$logs/clone-$run"
    git clone -q --no-local . "$clone"
    git -C "$clone" checkout -q "$commit"
    started=$(date +%s)
    if (cd "$clone" && ${CI_LOAD_TARGET:+env CARGO_TARGET_DIR="$CI_LOAD_TARGET"} .ci/run) > "$logs/run-$run.log" 2>&1; then
        result=passed
    else
        result=FAILED failed=$((failed + 1))
    fi
    minutes=$(( ($(date +%s) - started + 30) / 60 ))
    echo "run $run: $result in $minutes min (load average $(cut -d' ' -f1-3 /proc/loadavg)); log: $logs/run-$run.log"
    [ "$result" = passed ] && rm -rf "$clone"
done
[ "$failed" -eq 0 ]
