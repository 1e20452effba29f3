#!/usr/bin/env bash
# Install Apache ZooKeeper for zklock's real-server tests (lock-testkit).
#
# Idempotent: exits 0 at once when ZooKeeper is already usable, i.e. when
#   * ZOOKEEPER_CLASSPATH or ZOOKEEPER_HOME is set (the caller brings its own), or
#   * Debian's zookeeper package jars are present under /usr/share/java.
# Otherwise installs Debian's `zookeeper` package (3.8.x) with apt-get, non-interactively.
# Needs root (or sudo) and access to the Debian package mirror. Java 17 must be present
# (the package pulls in a JRE when it is not).
set -euo pipefail

JAVA_DIR=/usr/share/java

have_jars() {
    [ -e "$JAVA_DIR/zookeeper.jar" ] && [ -e "$JAVA_DIR/zookeeper-jute.jar" ]
}

if [ -n "${ZOOKEEPER_CLASSPATH:-}" ]; then
    echo "install-zookeeper: ZOOKEEPER_CLASSPATH is set; nothing to do"
    exit 0
fi
if [ -n "${ZOOKEEPER_HOME:-}" ]; then
    echo "install-zookeeper: ZOOKEEPER_HOME=$ZOOKEEPER_HOME is set; nothing to do"
    exit 0
fi
if have_jars; then
    echo "install-zookeeper: ZooKeeper jars already present in $JAVA_DIR"
    exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo -E"
    else
        echo "install-zookeeper: not root and no sudo; run as root:" >&2
        echo "  apt-get update && apt-get install -y --no-install-recommends zookeeper" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-zookeeper: installing Debian package 'zookeeper'"
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends zookeeper

if ! have_jars; then
    echo "install-zookeeper: apt-get finished but $JAVA_DIR/zookeeper.jar is missing" >&2
    exit 1
fi
if ! command -v java >/dev/null 2>&1; then
    echo "install-zookeeper: ZooKeeper installed, but no 'java' on PATH" >&2
    exit 1
fi
echo "install-zookeeper: done"
