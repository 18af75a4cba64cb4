# watchlife: `make run` runs it on the embedded demo; `make test` runs every test.
# Both install what they need first (once per machine) and are quick when
# nothing changed.

CARGO ?= cargo
TARGET_DIR := $(shell $(CARGO) metadata --format-version 1 --no-deps 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo target)
WATCHLIFE := $(TARGET_DIR)/release/watchlife
ARGS ?=
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: install run build frontend setup test test-setup lint bench embed clean

## run: build everything and start watchlife on 127.0.0.1:8080 (the embedded demo)
run: build
	$(WATCHLIFE) $(ARGS)

## build: the browser app, then the one `watchlife` binary that embeds it
build: frontend
	$(CARGO) build --release -p watchlife

## frontend: the browser app, built by Trunk into dist/
frontend: setup
	@echo "[build] the browser app (trunk build --release; about 2 minutes the first time, seconds after)"
	trunk build --release

setup:
	@scripts/setup-build.sh

test-setup: setup
	@scripts/setup-test.sh

## test: formatting, lints and every test (unit, integration, browser)
test: test-setup build lint
	WATCHLIFE_BIN=$(WATCHLIFE) $(CARGO) test --workspace

## bench: measure watchlife beside its references and write BENCHMARKS.md (about 12 minutes)
# Up to 20,000 open files for the viewers, or as many as the hard limit allows.
bench: build
	$(CARGO) build --release -p watchlife-bench
	ulimit -n 20000 2>/dev/null || ulimit -n $$(ulimit -Hn); $(TARGET_DIR)/release/watchlife-bench --watchlife $(WATCHLIFE) $(BENCH_ARGS)

## install: the binary, and a link that makes it `kubectl watchlife` (PREFIX=~/.local by default)
PREFIX ?= $(HOME)/.local
install: build
	install -D -m 0755 $(WATCHLIFE) $(PREFIX)/bin/watchlife
	ln -sf watchlife $(PREFIX)/bin/kubectl-watchlife
	@echo "installed $(PREFIX)/bin/watchlife; 'kubectl watchlife' works when $(PREFIX)/bin is on PATH"

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
	rm -rf dist
