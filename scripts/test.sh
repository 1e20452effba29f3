#!/usr/bin/env bash
# The project's test command: installs what the tests need when it is missing (Debian
# packages via apt-get; ZOOKEEPER_HOME / ZOOKEEPER_CLASSPATH may point at another
# ZooKeeper), then runs every test of the workspace (unit, simulation, real-server,
# interop, doc tests).
#
# * ZooKeeper (scripts/install-zookeeper.sh);
# * for the interop tests: kazoo for /usr/bin/python3 (python3-kazoo), Curator 5.4's jars
#   (libcurator-recipes-java) and a JDK to compile the Curator peer
#   (openjdk-17-jdk-headless, only if there is no javac); and the newest kazoo release
#   from PyPI in a virtualenv at <target dir>/kazoo-venv (python3-venv, then pip), which
#   the kazoo interop tests run against as well as Debian's;
# * for the zklock command's terminal test: script(1) (bsdutils, essential on Debian);
# * for lock-testkit's network namespaces (NetLab: partition tests, run as root):
#   ip(8) (iproute2) and nft(8) (nftables);
# * for the fencing tests, PostgreSQL (postgresql: server, initdb, psql), which
#   lock-testkit runs as the `postgres` user when the tests run as root.
#
# Last, zklock as a user gets it (scripts/dependent-crate.sh): every publishable
# crate packaged with its verification build, and a crate outside the repository
# built against the packages with each feature set, taking a lock on a real
# ZooKeeper and on the in-process server; `cargo install` of the packaged CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo test --workspace "$@"
# The examples run on lock-sim's in-process server and check what they show: each
# must finish cleanly (cargo test builds them but does not run them).
for example in demo revocation election sections fenced lease philosophers metrics; do
    cargo run --quiet --example "$example" > /dev/null
done
bash scripts/dependent-crate.sh
