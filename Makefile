# Set-up is part of every target: a fresh clone needs nothing but Python 3.11+.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The CPU build of PyTorch is pinned and installed first, so the package's own
# "torch>=..." requirement is already met and no CUDA wheels are pulled in.
TORCH  ?= torch==2.13.0
CONFIG ?= configs/multi30k-de-en-transformer.yaml

# The browser test drives Debian's Chromium (no browser download).
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup browser demo docs test test-gpu gpu-wheels gpu-check lint bench bench-gpu bench-quality bench-quality-rnn bench-decode bench-serve bench-lm clean

setup: $(STAMP)

# when this make started: the set-up's time, kept in the stamp, which the demo
# counts in its estimate
STARTED := $(shell date +%s)

$(STAMP): pyproject.toml
	@echo "setup: a virtual environment in $(VENV): about 3 minutes the first time on 2 cores, pip working quietly (PyTorch alone is about 200 MB)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@echo "setup: PyTorch, CPU build ($(TORCH))"
	$(BIN)/pip install --quiet "$(TORCH)"
	@echo "setup: Rosetta and its dependencies"
	$(BIN)/pip install --quiet -e ".[dev,ct2,datasets,tensorboard]"
	echo $$(( $$(date +%s) - $(STARTED) )) > $(STAMP)
	@echo "setup: done in $$(cat $(STAMP)) s"

browser:
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP)
	$(BIN)/rosetta demo --config $(CONFIG) $(DEMO_FLAGS)

# The documentation site (site/), strict: a broken link or reference fails
# (not --quiet, which hides the warnings strict mode counts).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: $(STAMP) browser docs
	$(BIN)/ruff check src tests benchmarks
	ROSETTA_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q --durations=25

# The same suite on a CUDA GPU: its own environment with PyPI's default PyTorch
# build (which carries CUDA on Linux), and the device tests required to run on
# the GPU (tests/conftest.py) instead of skipping.
GPU_VENV  := .venv-gpu
GPU_STAMP := $(GPU_VENV)/.installed
GPU_TORCH ?= torch

$(GPU_STAMP): pyproject.toml
	test -x $(GPU_VENV)/bin/python || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/pip install --quiet --upgrade pip
	$(GPU_VENV)/bin/pip install --quiet "$(GPU_TORCH)"
	$(GPU_VENV)/bin/pip install --quiet -e ".[dev,ct2,datasets]"
	touch $(GPU_STAMP)

test-gpu: $(GPU_STAMP)
	ROSETTA_REQUIRE_CUDA=1 $(GPU_VENV)/bin/python -m pytest -q

# mypy checks the packages [tool.mypy] of pyproject.toml names
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# The README's quality table: train the default for 100 minutes, score test_2016.
bench-quality: $(STAMP)
	$(BIN)/python benchmarks/quality_multi30k.py --config $(CONFIG) \
		--set train.max_minutes=100

# The recurrent rows of docs/performance.md's model table (RNN_MINUTES each).
RNN_MINUTES ?= 100
RNN_CONFIGS = gru lstm gru-attention lstm-bi-attention
bench-quality-rnn: $(STAMP)
	for name in $(RNN_CONFIGS); do \
		$(BIN)/python benchmarks/quality_multi30k.py \
			--config configs/multi30k-de-en-$$name.yaml \
			--set train.max_minutes=$(RNN_MINUTES) \
			--json benchmarks/results/quality-$$name.json || exit 1; \
	done

# Decoding speed against Hugging Face generate() and CTranslate2 (same weights).
DECODE_RUN ?= runs/quality-multi30k-de-en-transformer
bench-decode: $(STAMP)
	$(BIN)/pip install -q -e .[bench]
	$(BIN)/python benchmarks/decode_speed.py --run-dir $(DECODE_RUN)

# The speed suite against Hugging Face and CTranslate2, one command: training
# throughput (1 and 2 threads, fp32 and bf16), cost against sentence length,
# decoding (fp32, bf16 and int8) of the model trained by bench-quality, the
# packed decoder step against the layers' path, and the hand-written pieces
# alone.
bench: $(STAMP)
	$(BIN)/pip install -q -e .[bench]
	for p in fp32 bf16; do $(BIN)/python benchmarks/train_speed.py --threads 1 2 \
		--precision $$p --json benchmarks/results/train_speed-$$p.json || exit 1; done
	$(BIN)/python benchmarks/length_scaling.py --threads 1
	@test -d $(DECODE_RUN) || { echo "decoding needs a trained model: make bench-quality"; exit 1; }
	for p in fp32 bf16 int8; do $(BIN)/python benchmarks/decode_speed.py \
		--run-dir $(DECODE_RUN) --precision $$p || exit 1; done
	$(BIN)/python benchmarks/decode_speed.py --run-dir $(DECODE_RUN) --threads 2 \
		--batch-sizes 32 --workers --json benchmarks/results/decode_speed-workers.json
	for p in fp32 bf16; do $(BIN)/python benchmarks/packed_step.py \
		--run-dir $(DECODE_RUN) --precision $$p || exit 1; done
	$(BIN)/python benchmarks/components.py --threads 1
	$(BIN)/python benchmarks/cold_cache.py

# The speed suite on a CUDA GPU, in the GPU environment: training throughput of
# the bundled shape (2,500 and 12,000 tokens) and Transformer-base (25,000),
# fp32 and bf16, then decoding at batch 32 and 128. Without the bundled model
# it first trains one on the GPU (GPU_TRAIN_MINUTES).
GPU_RUN ?= runs/quality-multi30k-de-en-transformer-cuda
GPU_TRAIN_MINUTES ?= 20
bench-gpu: $(GPU_STAMP)
	$(GPU_VENV)/bin/pip install -q -e .[bench]
	for p in fp32 bf16; do \
		for t in 2500 12000; do $(GPU_VENV)/bin/python benchmarks/train_speed.py \
			--device cuda --precision $$p --batch-tokens $$t \
			--json benchmarks/results/train_speed-cuda-bundled-$$t-$$p.json || exit 1; done; \
		$(GPU_VENV)/bin/python benchmarks/train_speed.py --device cuda --shape base \
			--precision $$p --batch-tokens 25000 \
			--json benchmarks/results/train_speed-cuda-base-25000-$$p.json || exit 1; \
	done
	test -d $(GPU_RUN) || $(GPU_VENV)/bin/rosetta train $(CONFIG) -o $(GPU_RUN) \
		--set train.device=cuda --set train.max_minutes=$(GPU_TRAIN_MINUTES)
	for p in fp32 bf16; do $(GPU_VENV)/bin/python benchmarks/decode_speed.py \
		--device cuda --run-dir $(GPU_RUN) --precision $$p --batch-sizes 32 128 \
		|| exit 1; done

# Every GPU claim in one command on a GPU machine with no network: its own
# python3 (PyTorch with CUDA), what Rosetta needs beside it carried as wheels
# made beforehand by gpu-wheels (on a machine with network), Rosetta from this
# working tree; within GPU_CHECK_MINUTES, one table in $(GPU_CHECK_OUT)/.
# DEVICE=cpu is the dry run with tiny sizes (CI runs it).
DEVICE ?= cuda
GPU_CHECK_OUT ?= gpu-check
# nine minutes on a GPU; the dry run's time limits are only against a hang
GPU_CHECK_MINUTES ?= $(if $(filter cpu,$(DEVICE)),45,9)
GPU_WHEELS := .gpu-wheels
GPU_PYTHON_VERSION ?= 3.12
# what the GPU machine's image lacks (its PyTorch, numpy, sentencepiece,
# sacrebleu, safetensors, transformers, pytest... are there)
GPU_CARRIED = pydantic pydantic_core annotated-types typing-inspection \
	fastapi starlette uvicorn opentelemetry-api ctranslate2 py3langid
GPU_PLATFORMS = $(foreach n,2_28 2_27 2_17,--platform manylinux_$(n)_x86_64) \
	--platform manylinux2014_x86_64
# The check's own process needs only the standard library and runs without
# site-packages (-S) or PYTHON* variables (-E) on both machines, so that the
# dry run, like the GPU machine, has no Rosetta or pydantic to lean on there;
# its stages run with CHECK_PYTHON (the GPU machine's python3, with PyTorch).
CHECK_PARENT = $(PYTHON) -E -S
CHECK_PYTHON = $(if $(filter cpu,$(DEVICE)),$(BIN)/python,python3)

gpu-wheels: $(STAMP)
	mkdir -p $(GPU_WHEELS)
	for p in $(GPU_CARRIED); do \
		v=$$($(BIN)/python -c "from importlib.metadata import version; print(version('$$p'))") \
		&& $(BIN)/pip download --quiet --no-deps --only-binary=:all: \
			--python-version $(GPU_PYTHON_VERSION) --implementation cp \
			$(GPU_PLATFORMS) -d $(GPU_WHEELS) "$$p==$$v" || exit 1; done
	# eflomal publishes no wheels: its source, built there without the network
	$(BIN)/pip download --quiet --no-deps --no-binary=:all: --no-build-isolation \
		-d $(GPU_WHEELS) \
		"eflomal==$$($(BIN)/python -c "from importlib.metadata import version; print(version('eflomal'))")"
	@du -sh $(GPU_WHEELS)

gpu-check: $(if $(filter cpu,$(DEVICE)),$(STAMP))
	$(if $(filter cpu,$(DEVICE)),$(BIN)/pip install -q -e .[bench])
	$(CHECK_PARENT) benchmarks/gpu_check.py --device $(DEVICE) --python $(CHECK_PYTHON) \
		--out $(GPU_CHECK_OUT) --minutes $(GPU_CHECK_MINUTES) $(GPU_CHECK_FLAGS)

# The server under load: dynamic batching on and off, then one worker and two.
bench-serve: $(STAMP)
	$(BIN)/python benchmarks/serve_load.py --run-dir $(DECODE_RUN)
	$(BIN)/python benchmarks/serve_load.py --run-dir $(DECODE_RUN) \
		--compare workers --threads 2 --workers 2

# Language models: 15 minutes of Transformer-XL and of the same model without
# memory on tiny Shakespeare, then scoring with more and less memory.
LM_CONFIG = configs/tinyshakespeare-char-xl-cpu.yaml
LM_RUN = runs/tinyshakespeare-char-xl-cpu
bench-lm: $(STAMP)
	test -d $(LM_RUN) || $(BIN)/rosetta train $(LM_CONFIG) -o $(LM_RUN)
	test -d $(LM_RUN)-nomem || $(BIN)/rosetta train $(LM_CONFIG) \
		--set model.memory_length=0 -o $(LM_RUN)-nomem
	$(BIN)/python benchmarks/lm_memory.py --run-dir $(LM_RUN) --baseline $(LM_RUN)-nomem

clean:
	rm -rf $(VENV) $(GPU_VENV) runs .pytest_cache
