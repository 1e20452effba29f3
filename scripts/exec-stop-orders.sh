#!/usr/bin/env bash
# How long CMD runs after the lock could have been granted elsewhere, per order
# of stopping and continuing zklock and CMD's process group (with and without
# setsid): cli/tests/stop_orders.rs, each scenario RUNS times (default 20), the
# worst case printed per scenario. A negative number: CMD's last write came
# that long *before* the next holder's grant.
#
#   scripts/exec-stop-orders.sh [RUNS] [ZKLOCK_BINARY]
#
# ZKLOCK_BINARY measures another build (e.g. main's: target/debug/zklock of a
# checkout of main); the assertions of the tests then report its failures too,
# which is the point of measuring it.
set -u
runs=${1:-20}
cd "$(dirname "$0")/.."
if [ $# -ge 2 ]; then export ZKLOCK_BIN=$2; fi
ZKLOCK_STOP_ORDER_RUNS=$runs cargo test -p zklock-cli --test stop_orders -- \
    --nocapture --test-threads=1 2>&1 | grep -E '^STOP-ORDER|^test result'
