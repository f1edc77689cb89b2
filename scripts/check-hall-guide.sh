#!/usr/bin/env bash
# Follows deploy/README.md's "A tournament hall, step by step" on four fresh Debian 12 systems:
# each a debootstrap'ed root (an overlay on one cached base in var/hall-check) chrooted into a
# network namespace of its own, all on one bridge at the guide's addresses. Every ```sh block
# under an `<!-- on: HOSTS -->` line runs on those hosts, in the guide's order, as root; it fails
# at the first command that fails. Run as root: `scripts/check-hall-guide.sh` (about 5 minutes
# the first time, which downloads Debian's base system; 2 minutes after). `--keep` leaves the
# hall running at the end (stop it with `--stop`).
#
# Two things are emulated, and said so as they happen: `systemctl enable --now UNIT` starts the
# unit's ExecStart as its User, with its EnvironmentFile, restarted on failure as the unit says,
# and `systemctl reload UNIT` sends its process a HUP (there is no systemd inside a chroot), and
# `scp FILE HOST:DIR` copies between the systems' directories (there is no SSH between them). A block that installs packages reaches Debian's
# mirror through this machine's network (the systems have no route out).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'hall-check: %s\n' "$*" >&2; }

work=$PWD/var/hall-check
base=$work/rootfs
guide=deploy/README.md
hosts=(boardcast-1 boardcast-2 boardcast-3 board-pc-1)
declare -A address=([boardcast-1]=192.168.77.11 [boardcast-2]=192.168.77.12
  [boardcast-3]=192.168.77.13 [board-pc-1]=192.168.77.21)
bridge=hallcheck0
password="a hall check password"

root_of() { echo "$work/machines/$1/root"; }
netns_of() { echo "hallcheck-$1"; }
# The bridge's end of a host's veth pair (interface names have at most 15 characters).
link_of() { echo "hc-${1: -1}${#1}"; }

stop() {
  for host in "${hosts[@]}"; do
    local ns root
    ns=$(netns_of "$host")
    root=$(root_of "$host")
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    fi
    for mount in run/hall-copies dev/pts dev proc ""; do
      mountpoint -q "$root/$mount" 2>/dev/null && umount -l "$root/$mount" || true
    done
    ip link del "$(link_of "$host")" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

if [ "$(id -u)" -ne 0 ]; then
  say "run it as root: it makes network namespaces, mounts and chroots"
  exit 1
fi
if [ "${1:-}" = "--stop" ]; then
  stop
  say "stopped"
  exit 0
fi
keep=${1:-}
for tool in debootstrap ip chroot mountpoint; do
  command -v "$tool" >/dev/null || { say "$tool is needed (apt-get install debootstrap iproute2)"; exit 1; }
done

# The base system, made once: what a fresh Debian 12 installation has (with package lists).
mkdir -p "$work"
if [ ! -x "$base/bin/bash" ]; then
  say "making a Debian 12 base system with debootstrap (once; cached in $base) …"
  rm -rf "$base.tmp"
  debootstrap --variant=minbase --include=ca-certificates,adduser,curl bookworm "$base.tmp" \
    http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }
  cp /etc/resolv.conf "$base.tmp/etc/resolv.conf"
  # As in a container: packages do not start their services (there is no systemd here, and a
  # package's daemon would run in this machine's network).
  printf '#!/bin/sh\nexit 101\n' >"$base.tmp/usr/sbin/policy-rc.d"
  chmod 755 "$base.tmp/usr/sbin/policy-rc.d"
  chroot "$base.tmp" apt-get update -qq
  mv "$base.tmp" "$base"
fi

# Package downloads go through this machine's network: where it reaches the internet through a
# proxy with an authority of its own (local certificates in /usr/local/share/ca-certificates),
# the systems trust that authority too, as this machine does.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  for cert in /usr/local/share/ca-certificates/*.crt; do
    if ! cmp -s "$cert" "$base/usr/local/share/ca-certificates/$(basename "$cert")"; then
      say "the systems trust this machine's local authority $(basename "$cert") (for downloads)"
      cp "$cert" "$base/usr/local/share/ca-certificates/"
      chroot "$base" update-ca-certificates >/dev/null
    fi
  done
fi

# The release programs, built as the guide's first paragraph says.
say "building the release programs …"
cargo build --release --bins --quiet

stop
rm -rf "$work/machines" "$work/copies"
trap '[ "$keep" = "--keep" ] || stop' EXIT

# The network: one bridge, and per host a namespace with a veth pair on it.
ip link add "$bridge" type bridge
ip link set "$bridge" up
for host in "${hosts[@]}"; do
  ns=$(netns_of "$host")
  outer=$(link_of "$host")
  ip netns add "$ns"
  ip link add "$outer" type veth peer name eth0 netns "$ns"
  ip link set "$outer" master "$bridge" up
  ip -n "$ns" addr add "${address[$host]}/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

# The systems: an overlay on the base each, with the programs and deploy/ copied where the guide
# says, and the check's stand-ins for systemctl and scp.
mkdir -p "$work/copies"
for host in "${hosts[@]}"; do
  dir=$work/machines/$host
  root=$(root_of "$host")
  mkdir -p "$dir/upper" "$dir/overlay-work" "$root"
  mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/overlay-work" "$root"
  mount -t proc proc "$root/proc"
  mount --bind /dev "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"
  mkdir -p "$root/run/hall-copies" "$work/copies/$host"
  mount --bind "$work/copies" "$root/run/hall-copies"
  mkdir -p "$root/usr/local/src/boardcast"
  cp target/release/boardcast target/release/boardcast-*-service "$root/usr/local/src/boardcast/"
  cp -r deploy "$root/usr/local/src/boardcast/"
  mkdir -p "$root/usr/local/lib/hall-check"
  cat >"$root/usr/local/lib/hall-check/stand-ins.sh" <<'STANDINS'
# The check's stand-ins for what a real hall has and a chroot has not (see the script).
systemctl() {
  local action=$1; shift
  [ "${1:-}" = "--now" ] && shift
  local unit=${1%.service}
  if [ "$action" = disable ]; then
    echo "(check: systemctl $action $unit: nothing to do without systemd)"
    return 0
  fi
  local name=$unit instance=""
  case $unit in *@*) name=${unit%@*}@; instance=${unit#*@} ;; esac
  local file=/etc/systemd/system/$name.service
  [ -f "$file" ] || { echo "Unit $unit.service does not exist." >&2; return 1; }
  local user env exec restart workdir
  user=$(sed -n 's/^User=//p' "$file")
  env=$(sed -n 's/^EnvironmentFile=//p' "$file" | sed "s/%i/$instance/g")
  exec=$(sed -n 's/^ExecStart=//p' "$file" | sed "s/%i/$instance/g")
  if [ "$action" = reload ]; then
    # As the units' ExecReload: a HUP to the unit's process, the one in this system's network
    # namespace (the systems share the machine's process list).
    local dir found="" own
    own=$(readlink /proc/self/ns/net)
    for dir in /proc/[0-9]*; do
      [ "$(readlink "$dir/ns/net" 2>/dev/null)" = "$own" ] || continue
      [ "$(tr '\0' ' ' <"$dir/cmdline" 2>/dev/null)" = "$exec " ] || continue
      kill -HUP "${dir#/proc/}" && found=1
    done
    echo "(check: systemctl reload $unit: a HUP to its process, as its ExecReload does)"
    [ -n "$found" ] || { echo "$unit is not running" >&2; return 1; }
    return 0
  fi
  restart=$(sed -n 's/^Restart=//p' "$file")
  workdir=$(sed -n 's/^WorkingDirectory=//p' "$file")
  echo "(check: systemctl $action --now $unit: starting \"$exec\" as ${user:-root}${env:+ with $env})"
  local log=/var/log/hall-check-$unit.log
  (
    cd "${workdir:-/}"
    while :; do
      runuser -u "${user:-root}" -- env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
        bash -c "set -a; ${env:+. $env;} set +a; exec $exec" >>"$log" 2>&1 && break
      [ "$restart" = on-failure ] || break
      sleep 2
    done
  ) </dev/null >/dev/null 2>&1 &
  disown
}
scp() {
  local source=$1 target=$2 host=${2%%:*} dir=${2#*:}
  mkdir -p "/run/hall-copies/$host/$dir"
  cp -p "$source" "/run/hall-copies/$host/$dir/"
  echo "(check: scp $source $target: copied between the systems)"
}
STANDINS
done

# Files "sent" with scp land in copies/HOST/PATH; each is put in place after the block, file by
# file, as scp does: the directories there keep their owners and modes.
deliver() {
  for host in "${hosts[@]}"; do
    local from=$work/copies/$host root
    root=$(root_of "$host")
    [ -n "$(ls -A "$from" 2>/dev/null)" ] || continue
    (cd "$from" && find . -type f) | while read -r file; do
      mkdir -p "$(dirname "$root/$file")"
      cp -p "$from/$file" "$root/$file"
    done
    rm -rf "${from:?}"/*
  done
}

# Runs one block of the guide on one host.
run_block() {
  local host=$1 block=$2 node=""
  case $host in boardcast-[0-9]) node=${host#boardcast-} ;; esac
  local root ns
  root=$(root_of "$host")
  ns=$(netns_of "$host")
  local wrapped="set -euo pipefail; export HOME=/root NODE=$node; . /usr/local/lib/hall-check/stand-ins.sh
$block"
  if grep -q 'apt-get' <<<"$block"; then
    say "  (installs packages: through this machine's network)"
    printf '%s\n' "$password" | chroot "$root" /bin/bash -c "$wrapped"
  else
    printf '%s\n' "$password" | ip netns exec "$ns" chroot "$root" /bin/bash -c "$wrapped"
  fi
}

# The guide's blocks, in order: each `<!-- on: … -->` line and the ```sh block after it.
mapfile -t marks < <(grep -n '^<!-- on: .* -->$' "$guide" | cut -d: -f1)
[ "${#marks[@]}" -gt 0 ] || { say "no blocks found in $guide"; exit 1; }
number=0
: >"$work/blocks.out"
for mark in "${marks[@]}"; do
  number=$((number + 1))
  on=$(sed -n "${mark}p" "$guide" | sed 's/^<!-- on: //; s/ -->$//')
  block=$(awk -v start="$mark" 'NR > start + 1 && /^```$/ { exit } NR > start + 1 { print }' "$guide")
  for host in $on; do
    say "block $number (line $mark) on $host"
    if ! run_block "$host" "$block" 2>&1 | tee -a "$work/blocks.out" | sed "s/^/  $host| /"; then
      say "block $number failed on $host; the services' logs:"
      for h in "${hosts[@]}"; do
        for log in "$(root_of "$h")"/var/log/hall-check-*.log; do
          [ -f "$log" ] && { say "$h: $log"; tail -5 "$log" >&2; }
        done
      done
      exit 1
    fi
    deliver
  done
done

# The check (step 6) printed the check game's PGN: the mate must be in it.
if ! grep -q 'Qxf7#' "$work/blocks.out"; then
  say "the check game's mate did not reach the broadcast's feed"
  exit 1
fi

# The gateway waits for its board: running, not restarting.
sleep 3
if ! ip netns pids "$(netns_of board-pc-1)" | xargs -r ps -o args= -p | grep -q 'boardcast gateway serial'; then
  say "the gateway on board-pc-1 is not running:"
  tail -5 "$(root_of board-pc-1)/var/log/hall-check-boardcast-gateway@hall-1.log" >&2 || true
  exit 1
fi
say "every block of the guide ran on its machines, and the hall works: feeds, dashboard, gateway"
if [ "$keep" = "--keep" ]; then
  say "left running (the systems are in $work/machines; stop with $0 --stop)"
fi
