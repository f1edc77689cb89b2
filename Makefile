# The two commands of the README.
#   make demo   the whole system on this machine, with simulated boards (Ctrl-C stops it)
#   make test   the whole test suite
#   make bench  the benchmarks on release builds, written to docs/benchmarks.md (about 35 min)
#   make explore  the property tests with fresh random cases (EXPLORE_ROUNDS, default 20)
# Options for the demo go in DEMO_ARGS, e.g. make demo DEMO_ARGS="--boards 10 --speed 120".

.PHONY: demo test lint bench explore

demo:
	@scripts/ensure-tools.sh
	cargo build --bins
	./target/debug/boardcast demo $(DEMO_ARGS)

# The property tests draw their cases from one fixed seed here, so that a run is repeatable;
# `make explore` draws new ones; `make test PROPTEST_RNG_SEED=<number>` runs on another seed.
PROPTEST_RNG_SEED ?= 20261124

test:
	@scripts/ensure-tools.sh --test
	cargo build --bins
	PROPTEST_RNG_SEED=$(PROPTEST_RNG_SEED) cargo test --workspace

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

bench:
	scripts/bench.sh

explore:
	scripts/explore.sh
