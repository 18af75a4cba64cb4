# watchlife: `make run` runs it on the embedded demo; `make test` runs every test.
# Both install what they need first (once per machine) and are quick when
# nothing changed.

CARGO ?= cargo
TARGET_DIR := $(shell $(CARGO) metadata --format-version 1 --no-deps 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null || echo target)
WATCHLIFE := $(TARGET_DIR)/release/watchlife
# A debug `watchlife` with the test-only faults (`make test-break`).
WATCHLIFE_TEST_BIN := $(TARGET_DIR)/debug/watchlife-test-break
ARGS ?=
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: install run build frontend setup test test-setup test-break lint lint-source bench embed scenarios clean image deploy-token fuzz chaos

## run: build everything and start watchlife on 127.0.0.1:8080 (the embedded demo)
run: build
	$(WATCHLIFE) $(ARGS)

## build: the browser app, then the one `watchlife` binary that embeds it
build: frontend
	$(CARGO) build --release -p watchlife

## frontend: the browser app, built by Trunk into dist/
# Trunk runs only when something the page is built from changed since its last
# build (the stamp below), and writes into a staging folder; only the files
# whose bytes changed are copied to dist/. The binary embeds dist/, so a tree
# that did not change costs no Trunk run and no rebuild of the binary: `make
# run` then serves in a few seconds. The live page compiles the frontend crate
# and the protocol crate only (the in-page demo's crates are `make embed`'s).
# static/head.html is the start of every page's head (index, embed, demo),
# which Trunk pastes in where a page says <link data-trunk rel="inline">.
FRONTEND_INPUTS := $(shell find frontend protocol watch live-heap -type f -not -name '*~' 2>/dev/null) \
	static/index.html static/head.html static/style.css static/favicon.svg Cargo.toml Cargo.lock Trunk.toml
# The stamp and Trunk's staging folder are this checkout's own, even when
# several checkouts share one target directory.
FRONTEND_WORK := $(TARGET_DIR)/frontend/$(subst /,_,$(CURDIR))
FRONTEND_STAMP := $(FRONTEND_WORK)/built.stamp
frontend: setup $(FRONTEND_STAMP)

$(FRONTEND_STAMP): $(FRONTEND_INPUTS) scripts/sync-dist.sh dist/index.html | setup
	@echo "[build] the browser app (trunk build --release; about 2 minutes the first time, seconds after)"
	trunk build --release --dist $(FRONTEND_WORK)/dist
	scripts/sync-dist.sh $(FRONTEND_WORK)/dist dist
	@touch $@

# A dist/ without the app (a fresh clone, `make clean`) is out of date.
dist/index.html: ;

## image: the OCI image, the release binary and the libraries it links on an empty base
##        (buildah, no daemon); prints its tag
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n1)
IMAGE ?= localhost/watchlife:$(VERSION)
image: build deploy-token
	@IMAGE=$(IMAGE) TARGET_DIR=$(TARGET_DIR) scripts/build-image.sh

## deploy-token: deploy/token.env, the viewers' token of `kubectl apply -k deploy/` (once)
deploy-token:
	@scripts/deploy-token.sh

setup:
	@scripts/setup-build.sh

test-setup: setup
	@scripts/setup-test.sh

## test: formatting, lints and every test (unit, integration, browser); the steps are
##       scripts/test.sh's (the tests' set-up runs in the background, beside the builds)
# Every process the tests start carries WATCHLIFE_TEST_RUN; when they are
# done, any still running was left behind by a test, and fails the run.
test:
	@MAKE="$(MAKE)" CARGO=$(CARGO) TARGET_DIR=$(TARGET_DIR) WATCHLIFE=$(WATCHLIFE) \
		IMAGE=$(IMAGE) scripts/test.sh

## test-break: a debug `watchlife` with the test-only faults of bridge/src/test_break.rs, for the
##             chaos tests that prove their invariants can fail, run by hand (`cargo test`);
##             copied aside, as `cargo test` builds the debug `watchlife` again without them.
##             `make test` needs none: its own debug build has the faults (scripts/test.sh)
test-break: setup
	$(CARGO) build -p watchlife --features test-break
	cp $(TARGET_DIR)/debug/watchlife $(WATCHLIFE_TEST_BIN)

## fuzz: the property tests of every parser of others' input (frames, recordings, viewer messages,
##       selectors, the demo API's bodies, patches and queries, flags, kubeconfigs), CASES cases
##       each; writes the Fuzzing section of RELIABILITY.md
CASES ?= 100000
fuzz: setup
	WATCHLIFE_FUZZ_CASES=$(CASES) $(CARGO) test -p watchlife-controlplane --test fuzz_selectors
	WATCHLIFE_FUZZ_CASES=$(CASES) $(CARGO) test -p watchlife-demo-apiserver --test fuzz_requests
	WATCHLIFE_FUZZ_CASES=$(CASES) $(CARGO) test -p watchlife --test fuzz_inputs
	WATCHLIFE_FUZZ_CASES=$(CASES) $(CARGO) test -p watchlife-protocol --test fuzz_frames
	CARGO=$(CARGO) scripts/fuzz-report.sh $(CASES)

## chaos: fault rounds on a real etcd and apiserver (ROUNDS=100, about 10 s a round;
##        SEED=… replays a run's plan) and RELIABILITY.md written from the run.
##        KUBERNETES=1.36 (default): the bridge with 1.36's rules against a v1.36
##        apiextensions-apiserver; KUBERNETES=1.20: 1.20's rules against kube-apiserver v1.20.2.
##        FAULTS=token-rotated,silent-watch keeps those kinds alone. Two bridges behind a
##        round-robin load balancer; `make test` runs the short form of both (every fault
##        once in each, but the 45-second silent watch).
ROUNDS ?= 100
SEED ?=
KUBERNETES ?= 1.36
FAULTS ?=
chaos: test-setup build
	CHAOS_ROUNDS=$(ROUNDS) CHAOS_SEED=$(SEED) CHAOS_FAULTS=$(FAULTS) CHAOS_REPORT=RELIABILITY.md WATCHLIFE_BIN=$(WATCHLIFE) \
		$(CARGO) test -p watchlife-tests --test chaos -- --nocapture --exact \
		fault_rounds_keep_every_viewer_exact_$(subst .,_,$(KUBERNETES))

## bench: measure watchlife beside its references and write BENCHMARKS.md (about 20 minutes;
##        BENCH_ARGS="--only NAME,..." runs some sections and merges them into it)
# Up to 20,000 open files for the viewers, or as many as the hard limit allows.
bench: build
	$(CARGO) build --release -p watchlife-bench
	ulimit -n 20000 2>/dev/null || ulimit -n $$(ulimit -Hn); $(TARGET_DIR)/release/watchlife-bench --watchlife $(WATCHLIFE) $(BENCH_ARGS)

## scenarios: record the shipped scenarios from the demo into static/scenarios/ (about three
##            minutes): each with Kubernetes 1.36's rules as NAME.jsonl, and with 1.20's as
##            NAME-1.20.jsonl (streaming-list is 1.36's only)
SCENARIOS := pod-lifecycle scale label-and-image compaction-relist slow-watcher many-watchers streaming-list consistent-read
SCENARIOS_1_20 := pod-lifecycle scale label-and-image compaction-relist slow-watcher many-watchers consistent-read
scenarios: build
	@for s in $(SCENARIOS); do \
		echo "[scenarios] recording $$s (Kubernetes 1.36)"; \
		$(WATCHLIFE) record --kubernetes 1.36 --scenario $$s --out static/scenarios/$$s.jsonl || exit 1; \
	done
	@for s in $(SCENARIOS_1_20); do \
		echo "[scenarios] recording $$s (Kubernetes 1.20)"; \
		$(WATCHLIFE) record --kubernetes 1.20 --scenario $$s --out static/scenarios/$$s-1.20.jsonl || exit 1; \
	done
	$(MAKE) build

## embed: a folder that any static host serves, no server logic (EMBED_DIR, default embed/):
##        embed.html?scenario=pod-lifecycle&controls=minimal&theme=dark&captions=on replays a recording;
##        demo.html runs the demo control plane in the page, its actions included
EMBED_DIR ?= embed
embed: setup
	@echo "[embed] the replay page and the in-page demo, with relative links, into $(EMBED_DIR)/"
	trunk build static/embed.html --release --dist $(TARGET_DIR)/embed-dist --public-url ./
	trunk build static/demo.html --release --dist $(TARGET_DIR)/demo-dist --public-url ./
	rm -rf $(EMBED_DIR)
	cp -r $(TARGET_DIR)/embed-dist $(EMBED_DIR)
	if [ -f $(EMBED_DIR)/index.html ]; then mv $(EMBED_DIR)/index.html $(EMBED_DIR)/embed.html; fi
	cp $(TARGET_DIR)/demo-dist/*.wasm $(TARGET_DIR)/demo-dist/*.js $(EMBED_DIR)/
	cp $(TARGET_DIR)/demo-dist/index.html $(EMBED_DIR)/demo.html
	@echo "[embed] $(EMBED_DIR)/embed.html is ready; gzipped it weighs $$(cat $(EMBED_DIR)/embed.html $$(grep -o 'watchlife-frontend-[0-9a-f]*[._a-z]*' $(EMBED_DIR)/embed.html | sort -u | sed 's|^|$(EMBED_DIR)/|') $(EMBED_DIR)/*.css | gzip -9 | wc -c) bytes, one scenario included: $$(gzip -9 -c $(EMBED_DIR)/scenarios/pod-lifecycle.jsonl | wc -c) bytes"
	@echo "[embed] $(EMBED_DIR)/demo.html is ready; gzipped it weighs $$(cat $(EMBED_DIR)/demo.html $$(grep -o 'watchlife-frontend-[0-9a-f]*[._a-z]*' $(EMBED_DIR)/demo.html | sort -u | sed 's|^|$(EMBED_DIR)/|') $(EMBED_DIR)/*.css | gzip -9 | wc -c) bytes"

## install: the binary, and a link that makes it `kubectl watchlife` (PREFIX=~/.local by default)
PREFIX ?= $(HOME)/.local
install: build
	install -D -m 0755 $(WATCHLIFE) $(PREFIX)/bin/watchlife
	ln -sf watchlife $(PREFIX)/bin/kubectl-watchlife
	@echo "installed $(PREFIX)/bin/watchlife; 'kubectl watchlife' works when $(PREFIX)/bin is on PATH"

## lint: formatting, code written twice, and clippy's lints as errors (make test checks the
##       same, clippy being the compiler of its tests' build: scripts/test.sh)
lint: lint-source
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p watchlife-frontend --features replay --all-targets -- -D warnings
	$(CARGO) clippy -p watchlife-frontend --features in-page --all-targets -- -D warnings

lint-source:
	$(CARGO) fmt --all --check
	scripts/check-duplicates.sh

clean:
	$(CARGO) clean
	rm -rf dist embed
