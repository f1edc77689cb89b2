# The two commands of the README.
#   make demo   the whole system on this machine, with simulated boards (Ctrl-C stops it)
#   make test   the whole test suite
#   make bench  the benchmarks on release builds, written to docs/benchmarks.md (about 20 min)
# Options for the demo go in DEMO_ARGS, e.g. make demo DEMO_ARGS="--boards 10 --speed 120".

.PHONY: demo test lint bench

demo:
	@scripts/ensure-tools.sh
	cargo build --bins
	./target/debug/boardcast demo $(DEMO_ARGS)

test:
	@scripts/ensure-tools.sh --test
	cargo build --bins
	cargo test --workspace

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

bench:
	scripts/bench.sh
