# durasim — one entry point for the main job, the tests and the checks.
# `make report` builds the Python extension once and reproduces the four
# papers at small scale as one sweep: report/<paper>/ and report/index.html
# (`make report PAPER=hoop` for one paper, `SCALE=tiny` for a smoke run); `make test` runs every test (Rust and Python)
# and `make docs` (links, the README's and guide's commands, the reference).
# Builds are stamped: a second `make report`/`make test` reuses the
# extension unless a Rust source, Cargo.toml/Cargo.lock or pyproject.toml
# changed (Python sources are installed editable and need no rebuild).

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
SCALE ?= small
PAPER ?= all
# Everything the compiled extension depends on.
RUST_SRC := Cargo.toml Cargo.lock pyproject.toml \
	$(shell find crates -name '*.rs' -o -name Cargo.toml)
EXT_STAMP := $(VENV)/.ext-built

.PHONY: build run report test test-rust test-python lint bench bench-free bench-instr python clean docs docs-gen

build:
	cargo build --release -p durasim

# Three HOOP-paper schemes against the native system on the HOOP paper's
# machine, each run long enough for HOOP's GC and Opt-Redo's checkpoints to
# run in the measured window (the schemes' default length; a few minutes).
run: build
	./target/release/durasim compare --schemes opt-redo,hoop,lad,ideal --workloads btree,hashmap

$(VENV)/.deps: pyproject.toml
	@echo "== creating $(VENV) and installing Python dependencies (needs PyPI)"
	python3 -m venv $(VENV)
	$(PIP) install --quiet --quiet --upgrade pip
	$(PIP) install --quiet --quiet maturin pandas matplotlib "dask[distributed]" tqdm \
		pytest hypothesis ruff
	touch $@

# maturin installs the package editable (python/ on the path) the first time;
# later builds only rebuild the extension in place (--skip-install), which
# keeps pip's "Requirement already satisfied" lines out of the log.
$(EXT_STAMP): $(VENV)/.deps $(RUST_SRC)
	@echo "== building the Python extension (release, fat LTO: minutes on 2 cores)"
	@. $(VENV)/bin/activate && \
	if $(PY) -c 'import durasim._native' 2>/dev/null; then how=--skip-install; else how=; fi && \
	maturin develop --release --quiet $$how > $(VENV)/build.log 2>&1 \
		|| { cat $(VENV)/build.log; echo "== extension build failed (log: $(VENV)/build.log)"; exit 1; }
	@grep -v -E '^(Requirement already satisfied|Ignoring |Looking in links|📦|🍹|🐍|🔗|📡|✏️|🛠)' \
		$(VENV)/build.log || true
	@$(PY) -c 'import durasim; print("== durasim", durasim.version(), "extension ready")'
	@touch $@

python: $(EXT_STAMP)

report: python
	$(VENV)/bin/durasim-lab reproduce $(PAPER) --scale $(SCALE) \
		--out report$(if $(filter all,$(PAPER)),,/$(PAPER))

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy -p durasim --all-targets --features example-scheme -- -D warnings
	cargo clippy -p durasim --lib --benches --features free-memory -- -D warnings

# The test-only example scheme (docs/ARCHITECTURE.md "Adding a scheme"):
# its own tests, then the registry-wide loops it joins, run on it alone.
test-rust:
	cargo test --workspace
	cargo test -p durasim --features example-scheme --test example_scheme
	DURASIM_TEST_SCHEMES=example-redo cargo test -p durasim --features example-scheme \
		--test crash_oracle --test engine_runs --test mutants \
		-- every_registered_scheme every_scheme_and_workload every_declared_mutant

test-python: python build
	$(VENV)/bin/ruff check python
	$(VENV)/bin/python -m pytest -q python/tests --ignore=python/tests/test_docs.py

# The documentation (python/tests/test_docs.py): docs/reference/ regenerated
# and diffed and quoted code in sync (scripts/docs.py check), every relative
# link and anchor resolves, every command and snippet of README.md and
# docs/guide/ runs at small sizes. Needs the release CLI and the extension.
docs: build python
	$(VENV)/bin/python -m pytest -q python/tests/test_docs.py

# Rewrite docs/reference/ and the guide's quoted code from the sources.
docs-gen: build python
	$(PY) scripts/docs.py gen

test: lint test-rust test-python docs

# Criterion speed benchmarks, then the per-scheme speed table (README).
bench:
	cargo bench -p durasim --bench sim_speed
	python3 scripts/speed_table.py

# The per-scheme benchmark again in the free-memory diagnostic build (a
# memory system that costs nothing; its own target directory), then the
# table of the last `make bench` with each scheme's ratio in that build.
bench-free:
	CARGO_TARGET_DIR=$(CURDIR)/target/free-memory cargo bench -p durasim --features free-memory \
		--bench sim_speed -- sim_speed_paper
	python3 scripts/speed_table.py --free target/free-memory/criterion

# Host instructions per simulated memory operation for every benchmarked
# scheme, by component, counted by callgrind (needs valgrind; deterministic,
# so it separates a few percent the host's noise hides; about 20 minutes
# on two cores).
bench-instr: build
	python3 scripts/instr_split.py

clean:
	cargo clean
	rm -rf $(VENV) report
