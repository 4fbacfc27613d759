#!/usr/bin/env bash
# Container entrypoint: SageMaker runs `docker run IMAGE serve`.
#   serve  -> check the llama.cpp binding, then `semif serve` on SEMIF_HOST:SEMIF_PORT (0.0.0.0:8080),
#             serving the first *.gguf under SEMIF_MODEL_DIR (/opt/ml/model), in one process (exec: it
#             receives SageMaker's SIGTERM directly).
#   check  -> the binding check only (CodeBuild runs it before pushing).
#   other  -> run that command (debugging: `docker run -it IMAGE bash`).
# SEMIF_HOST / SEMIF_PORT / SEMIF_MODEL_DIR may be overridden (tests run this script on the host).
set -euo pipefail
PYTHON="${SEMIF_PYTHON:-python3}"
command="${1:-serve}"
case "$command" in
  serve)
    shift || true
    export SEMIF_HOST="${SEMIF_HOST:-0.0.0.0}"
    export SEMIF_PORT="${SEMIF_PORT:-8080}"
    export SEMIF_MODEL_DIR="${SEMIF_MODEL_DIR:-/opt/ml/model}"
    exec "$PYTHON" -m semif_lib.serving.llamabinding serve "$@"
    ;;
  check)
    exec "$PYTHON" -m semif_lib.serving.llamabinding check
    ;;
  *)
    exec "$@"
    ;;
esac
