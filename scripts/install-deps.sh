#!/usr/bin/env bash
# Installs what the tests and benchmarks need when it is missing (Debian packages via
# apt-get; ZOOKEEPER_HOME / ZOOKEEPER_CLASSPATH may point at another ZooKeeper): used by
# scripts/test.sh and scripts/bench.sh, which describe the list.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-zookeeper.sh

missing=()
/usr/bin/python3 -c 'import kazoo' 2>/dev/null || missing+=(python3-kazoo)
[ -e /usr/share/java/curator-recipes.jar ] || missing+=(libcurator-recipes-java)
# The Go interop peer (testkit/peers/go_peer.go) is built with
# Debian's Go in GOPATH mode against Debian's go-zookeeper snapshot.
command -v go >/dev/null 2>&1 || [ -x /usr/lib/go-1.19/bin/go ] || missing+=(golang-go)
[ -e /usr/share/gocode/src/github.com/samuel/go-zookeeper/zk/lock.go ] \
    || missing+=(golang-github-samuel-go-zookeeper-dev)
command -v javac >/dev/null 2>&1 \
    || { [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; } \
    || missing+=(openjdk-17-jdk-headless)
command -v script >/dev/null 2>&1 || missing+=(bsdutils)
PATH="$PATH:/usr/sbin:/sbin" command -v ip >/dev/null 2>&1 || missing+=(iproute2)
PATH="$PATH:/usr/sbin:/sbin" command -v nft >/dev/null 2>&1 || missing+=(nftables)
[ -n "${PG_BINDIR:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
    || missing+=(postgresql)
/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=
    [ "$(id -u)" -ne 0 ] && SUDO="sudo -E"
    export DEBIAN_FRONTEND=noninteractive
    echo "test.sh: installing ${missing[*]}"
    $SUDO apt-get install -y --no-install-recommends "${missing[@]}" \
        || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; }
fi
# The newest kazoo from PyPI, upgraded on every run so that a new release is tested as
# soon as it is out. Without the network an existing virtualenv is used as it is (said
# on stderr); without either the PyPI kazoo tests fail saying what is missing.
venv="${CARGO_TARGET_DIR:-target}/kazoo-venv"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade kazoo; then
    "$venv/bin/python" -c 'import kazoo' 2>/dev/null \
        || { echo "test.sh: cannot install kazoo from PyPI into $venv" >&2; exit 1; }
    echo "test.sh: PyPI unreachable, testing the kazoo already in $venv" >&2
fi
echo "test.sh: PyPI kazoo $("$venv/bin/python" -c 'import kazoo.version as v; print(v.__version__)') in $venv"
