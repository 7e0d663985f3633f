# durasim — one entry point for the main job, the tests and the checks.
# `make report` builds everything and regenerates the HOOP paper report at
# small scale; `make test` runs every test (Rust and Python).

VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: build run report test test-rust test-python lint bench python clean

build:
	cargo build --release

run: build
	./target/release/durasim compare --schemes ideal --workloads vector,hashmap,queue,rbtree,btree

$(VENV)/.deps:
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet maturin pandas matplotlib "dask[distributed]" tqdm pytest hypothesis ruff
	touch $@

python: $(VENV)/.deps
	. $(VENV)/bin/activate && maturin develop --release --quiet

report: build python
	$(VENV)/bin/durasim-lab reproduce hoop --scale small --out report/hoop

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings

test-rust:
	cargo test --workspace

test-python: python
	$(VENV)/bin/ruff check python
	$(VENV)/bin/python -m pytest -q python/tests

test: lint test-rust test-python

bench:
	cargo bench -p durasim --bench sim_speed

clean:
	cargo clean
	rm -rf $(VENV) report
