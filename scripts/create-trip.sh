#!/usr/bin/env bash
# The trip of one acquisition from the user API to the core's `create` request
# (issue 36): builds lock-client's unit tests, runs the one that polls
# `locks.mutex("/locks/a").lock()` once on a connected link under gdb, stops in
# lock-core's `Node::send_create` at its `Ctx::send`, and prints the stack in call order
# (file:line and function, lock-client's and lock-core's frames), then the files
# the call enters, a file counted each time the call enters it.
#
# Usage: scripts/create-trip.sh   (needs gdb)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v gdb >/dev/null || { echo "create-trip: gdb is not installed" >&2; exit 1; }
bin=$(cargo test -p lock-client --lib --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "lock_client" \
            and m["profile"]["test"] and m.get("executable"):
        print(m["executable"])')
[ -n "$bin" ] || { echo "create-trip: no lock-client test binary" >&2; exit 1; }
# The build may carry line tables only (no function entries for gdb): break on the
# symbols' addresses, at the base gdb loads a position-independent binary at.
# First our node's `Node::send_create`, then the `Ctx::send` it makes: the frame
# that queues the `create` request.
address() {
    local offset
    offset=$(nm -C "$bin" | grep " $1\$" | cut -d' ' -f1)
    [ -n "$offset" ] || { echo "create-trip: no $1 in $bin" >&2; exit 1; }
    printf '0x%x' $((0x555555554000 + 0x$offset))
}
node_create=$(address 'lock_core::acquisition::node::Node::send_create')
ctx_send=$(address 'lock_core::ctx::Ctx::send')
frames=$(cd client && gdb -q -batch -ex "break *$node_create" -ex run \
    -ex "break *$ctx_send" -ex continue -ex bt \
    --args "$bin" tests::lifecycle::a_lock_wakes_the_link_and_its_grant_wakes_the_future \
    --exact --test-threads=1 2>&1 |
    grep -E '^#[0-9]+ ' | grep -E ' at (client|core)/src/' | grep -v 'client/src/tests/' |
    sed -E 's/^#[0-9]+ +(0x[0-9a-f]+ in )?(.*) \(\) at ((client|core)\/src\/[^ ]+)$/\3  \2/' | tac)
[ -n "$frames" ] || { echo "create-trip: gdb did not stop in send_create" >&2; exit 1; }
echo "$frames"
echo
# The lock object comes from `LockClient::mutex` before `lock()` is called.
files=$( (echo "client/src/client/locks.rs:0"; echo "$frames") | cut -d: -f1 | uniq)
echo "$files" | nl -w2 -s'  '
echo "entries: $(echo "$files" | wc -l), distinct files: $(echo "$files" | sort -u | wc -l)"
