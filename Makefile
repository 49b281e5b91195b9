# oyster — the two commands a newcomer needs are `make demo` and `make test`.
CARGO ?= cargo

.PHONY: build test lint demo bench clean

build:
	$(CARGO) build --workspace --locked

## Format check, clippy with warnings as errors, then every test in the workspace.
test:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) test --workspace --locked

lint:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## Benchmarks (release build); the table is printed and written to target/bench/latest.md.
bench:
	$(CARGO) build --release --workspace --locked
	python3 scripts/bench.py

clean:
	$(CARGO) clean

## The main job, in a throw-away HOME, printed step by step.
demo: build
	bash scripts/demo.sh
