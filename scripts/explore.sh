#!/usr/bin/env bash
# `make explore`: the property tests with fresh random cases, round after round. `make test` runs
# them on one fixed seed so that a green run stays green; this is where new cases are found.
# A failing case is printed with its seed and kept by proptest in the test's
# `.proptest-regressions` file: commit that file and `make test` runs the case first from then on.
# EXPLORE_ROUNDS sets the number of rounds (default 20; a round takes about a minute on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${EXPLORE_ROUNDS:-20}
case $rounds in '' | *[!0-9]*)
  echo "explore: EXPLORE_ROUNDS must be a number of rounds, not '$rounds'" >&2
  exit 2
  ;;
esac
# The property tests: the libraries' own and their test files, the game service's ingest
# decisions (its test files start NATS and gain nothing from other seeds).
libraries=(-p boardcast-dgt -p boardcast-game -p boardcast-inference)
properties() {
  cargo test --quiet "${libraries[@]}" --lib --tests &&
    cargo test --quiet -p boardcast-game-service --bins
}

mkdir -p var
cargo test --quiet --no-run "${libraries[@]}" -p boardcast-game-service
for round in $(seq 1 "$rounds"); do
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  echo "explore: round $round of $rounds, PROPTEST_RNG_SEED=$seed" >&2
  if ! PROPTEST_RNG_SEED=$seed properties >"var/explore-$seed.log" 2>&1; then
    echo "explore: a case failed with PROPTEST_RNG_SEED=$seed; see var/explore-$seed.log" >&2
    grep -E "panicked at|minimal failing input|seed" "var/explore-$seed.log" | head -20 >&2
    exit 1
  fi
  rm -f "var/explore-$seed.log"
done
echo "explore: $rounds rounds, no failing case" >&2
