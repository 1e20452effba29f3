#!/usr/bin/env bash
# The project's test command: installs ZooKeeper (and kazoo, for the interop test)
# when missing (Debian packages via apt-get; ZOOKEEPER_HOME / ZOOKEEPER_CLASSPATH may
# point at another ZooKeeper), then runs every test of the workspace (unit,
# simulation, real-server, interop, doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-zookeeper.sh
if ! /usr/bin/python3 -c 'import kazoo' 2>/dev/null; then
    SUDO=
    [ "$(id -u)" -ne 0 ] && SUDO="sudo -E"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y --no-install-recommends python3-kazoo \
        || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends python3-kazoo; }
fi
cargo test --workspace "$@"
