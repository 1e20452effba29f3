#!/usr/bin/env bash
# Issue 36's numbers for lock-core's `Acquisition`, repeatable from the repository root:
#   fields         named fields of `struct Acquisition` (core/src/acquisition/mod.rs)
#   impl files     files holding an `impl Acquisition` block
#   guarded ids    `Option<RequestId>` fields left under core/src/acquisition (hand-guarded replies)
#   part fields    named fields per part struct (the parts that own the acquisition's state)
set -euo pipefail
cd "$(dirname "$0")/.."
struct_fields() { # FILE STRUCT
    awk -v s="$2" '$0 ~ "struct " s " \\{" {on=1; next} on && /^}/ {exit}
        on && /^    (pub\(super\) )?[a-z_0-9]+: / {n++} END {print n+0}' "$1"
}
echo "Acquisition fields: $(struct_fields core/src/acquisition/mod.rs Acquisition)"
files=$(grep -rl '^impl Acquisition' core/src | sort)
echo "files with impl Acquisition: $(echo "$files" | wc -l)"
echo "$files" | sed 's/^/  /'
echo "Option<RequestId> fields under core/src/acquisition: $(grep -rE '^\s+[a-z_]+: Option<RequestId>,' core/src/acquisition | wc -l)"
for f in core/src/acquisition/*.rs; do
    for s in $(grep -oE '^pub\(super\) struct [A-Za-z]+ \{' "$f" | awk '{print $3}'); do
        echo "part $s ($f): $(struct_fields "$f" "$s") fields"
    done
done
