#!/usr/bin/env bash
# The project's test command: installs ZooKeeper when missing (Debian's package via
# apt-get, unless ZOOKEEPER_HOME / ZOOKEEPER_CLASSPATH point at one), then runs every
# test of the workspace (unit, simulation, real-server, doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-zookeeper.sh
cargo test --workspace "$@"
