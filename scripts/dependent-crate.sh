#!/usr/bin/env bash
# zklock as a user gets it: packages every crate meant for the registry (`cargo
# package`, with its verification build: each crate builds from its package alone,
# against the others' packages), then builds and runs a crate made outside the
# repository (scripts/dependent-crate/) that depends on `zklock` as `cargo add zklock`
# writes it, once per feature set: tokio (the default), async-std, smol, blocking,
# sim. Each run takes, hands over and releases a lock on a real ZooKeeper (started
# with lock-testkit) and, with `sim`, on the in-process server. The packaged crates
# stand in for the registry (`--config patch.crates-io.<crate>.path=<unpacked
# .crate>`): nothing of the workspace, no `[patch]` of its own, reaches the build.
# Last, `cargo install` of the packaged zklock-cli, and its completions and man page.
#
# Usage: scripts/dependent-crate.sh [FEATURE_SET...]   (default: all five)
# Prints each crate's packaged size. Needs ZooKeeper (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
feature_sets=("$@")
[ ${#feature_sets[@]} -gt 0 ] || feature_sets=(tokio async-std smol blocking sim)

# The crates meant for the registry: every member not marked `publish = false`.
mapfile -t crates < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["publish"] != []:
        print(p["name"], p["version"])')
[ ${#crates[@]} -gt 0 ] || { echo "dependent-crate: no publishable crate found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/zklock-dependent.XXXXXX")
zk_pid=
cleanup() {
    [ -z "$zk_pid" ] || kill "$zk_pid" 2>/dev/null || true
    exec 3>&- 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "dependent-crate: cargo package (verified) of ${#crates[@]} crates"
args=()
for crate in "${crates[@]}"; do
    args+=(-p "${crate%% *}")
    # Verification unpacks each package from a temporary local registry into
    # $CARGO_HOME/registry/src/-<hash>/ and reuses a directory already there for the
    # same name and version: a second run would verify against the first run's
    # sources. Remove them so that every run verifies what it packaged.
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"${crate%% *}-${crate##* }"
done
# The verification builds share the target directory, where cargo takes a registry
# crate already built for the same name and version as fresh (registry sources do not
# change): a second run would link the first run's builds of our crates. Cleaning
# them (by name, whatever their source) makes every run verify what it packaged;
# their dependencies stay built.
cargo clean -q "${args[@]}"
# --allow-dirty: a local run packages the tree as it is; CI's clone is clean anyway.
cargo package --allow-dirty "${args[@]}"

patches=()
mkdir -p "$work/registry"
printf '%-24s %10s %10s\n' crate ".crate" files
for crate in "${crates[@]}"; do
    name=${crate%% *} version=${crate##* }
    file="$target/package/$name-$version.crate"
    tar -xzf "$file" -C "$work/registry"
    printf '%-24s %9sK %10s\n' "$name" "$(( ($(stat -c %s "$file") + 1023) / 1024 ))" "$(tar -tzf "$file" | wc -l)"
    patches+=(--config "patch.crates-io.$name.path='$work/registry/$name-$version'")
done
zklock_version=$(printf '%s\n' "${crates[@]}" | awk '$1 == "zklock" {print $2}')

# The user's crate, outside the repository.
mkdir -p "$work/app/src"
sed "s/@VERSION@/$zklock_version/" scripts/dependent-crate/Cargo.toml.in > "$work/app/Cargo.toml"
cp scripts/dependent-crate/src/main.rs "$work/app/src/main.rs"

# A real ZooKeeper for as long as this script runs (it stops when fd 3 closes).
mkfifo "$work/zk-stdin"
cargo build -q -p lock-testkit --example serve
"$target/debug/examples/serve" < "$work/zk-stdin" > "$work/zk-address" &
zk_pid=$!
exec 3> "$work/zk-stdin"
for _ in $(seq 600); do
    [ -s "$work/zk-address" ] && break
    kill -0 "$zk_pid" 2>/dev/null || { echo "dependent-crate: the ZooKeeper server did not start" >&2; exit 1; }
    sleep 0.1
done
zk=$(head -n 1 "$work/zk-address")
[ -n "$zk" ] || { echo "dependent-crate: no connect string from the ZooKeeper server" >&2; exit 1; }
echo "dependent-crate: ZooKeeper at $zk"

# The workspace's target directory: the registry crates the tests built are reused
# (our crates come from the unpacked packages, another source, so nothing of the
# workspace's own builds of them is).
export CARGO_TARGET_DIR="$target"
for set in "${feature_sets[@]}"; do
    if [ "$set" = tokio ]; then features=(); else features=(--no-default-features --features "$set"); fi
    echo "dependent-crate: feature set '$set'"
    (cd "$work/app" && cargo run -q "${patches[@]}" "${features[@]}" -- "$zk")
done

# A binding author's crate: the conformance kit against a binding, from the
# packages (a few of its tests, the rest run in the workspace; the test that
# needs `multi` says it is not applicable).
version_of() { printf '%s\n' "${crates[@]}" | awk -v n="$1" '$1 == n {print $2}'; }
mkdir -p "$work/binding/tests"
sed -e "s/@CONFORMANCE@/$(version_of lock-conformance)/" -e "s/@BINDING@/$(version_of lock-zookeeper-async)/" \
    scripts/dependent-crate/binding/Cargo.toml.in > "$work/binding/Cargo.toml"
cp scripts/dependent-crate/binding/tests/conformance.rs "$work/binding/tests/"
echo "dependent-crate: a binding author runs the conformance kit"
(cd "$work/binding" && cargo test -q "${patches[@]}" -- --nocapture \
    mutual_exclusion fifo_order fenced_write_only_while_held declared 2>&1 | tee "$work/binding.log")
grep -q "not applicable: Multi" "$work/binding.log" \
    || { echo "dependent-crate: the kit did not say a test needing multi is not applicable" >&2; exit 1; }

echo "dependent-crate: cargo install zklock-cli from its package"
cli_version=$(printf '%s\n' "${crates[@]}" | awk '$1 == "zklock-cli" {print $2}')
(cd "$work" && cargo install -q --debug "${patches[@]}" --path "$work/registry/zklock-cli-$cli_version" --root "$work/install")
"$work/install/bin/zklock" --version
"$work/install/bin/zklock" completions bash > "$work/zklock.bash"
grep -q "exec" "$work/zklock.bash" || { echo "dependent-crate: bash completions name no subcommand" >&2; exit 1; }
"$work/install/bin/zklock" man > "$work/zklock.1"
grep -q '^\.TH' "$work/zklock.1" || { echo "dependent-crate: the man page has no .TH header" >&2; exit 1; }
echo "dependent-crate: completions and man page from the installed zklock"
"$work/install/bin/zklock" exec -n --zk "$zk" /zklock-user/cli -- true
echo "dependent-crate: ok (${feature_sets[*]})"
