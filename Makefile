# accelbench: the two commands. Both create (or reuse) .venv with what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STORE ?= accelbench-results
SUITE ?= default

.PHONY: run test lint types unit chromium clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet -c constraints.txt "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all,dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/accelbench hw
	$(BIN)/accelbench run --suite $(SUITE) --store $(STORE)
	$(BIN)/accelbench report --store $(STORE) -o $(STORE)/report.html

test: $(STAMP) chromium lint types unit

# the HTML report's end-to-end test opens it in the system Chromium (Playwright never downloads a browser)
chromium:
	command -v chromium >/dev/null || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium; }

lint: $(STAMP)
	$(BIN)/ruff check accelbench tests benchmarks
	$(BIN)/ruff format --check accelbench tests benchmarks

types: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q -rs

clean:
	rm -rf $(VENV) $(STORE) .pytest_cache .mypy_cache .ruff_cache
