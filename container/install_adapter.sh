#!/usr/bin/env bash
# Installs the semif adapter into a llama.cpp DLC image (run by container/Dockerfile, as root).
# It assumes only what every DLC variant offers: /opt/llama.cpp/bin with llama-server, and a way to
# get Python >= 3.11. Nothing is compiled here.
#   1. Python: the newest python3.1x >= 3.11 on PATH, else install python3.12 with dnf (AL2023) or
#      apt-get; a venv in /opt/semif/venv (without ensurepip when the distribution left it out).
#   2. The serving dependencies (container/requirements.txt) and the project itself.
#   3. The llama.cpp build, read from `llama-server --version`, picks the llama-cpp-python binding from
#      the table of verified pairs (semif_lib.serving.llamabinding.VERIFIED_BINDINGS); no verified
#      pair fails the build, naming the build. The binding's pure-Python package is taken from its
#      sdist (no compiler, no libllama of its own) and points at the DLC's library (LLAMA_CPP_LIB_PATH).
#   4. The startup check (`llamabinding check`) runs once here, so a mismatch fails the build, not the endpoint.
set -euo pipefail
SRC="${1:-/opt/semif/src}"
VENV=/opt/semif/venv

find_python() {
  local candidate
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

PY="$(find_python || true)"
if [ -z "$PY" ]; then
  if command -v dnf >/dev/null; then
    dnf install -y --setopt=install_weak_deps=False python3.12 python3.12-pip && dnf clean all && rm -rf /var/cache/dnf
  elif command -v apt-get >/dev/null; then
    apt-get update && apt-get install -y --no-install-recommends python3 python3-pip && rm -rf /var/lib/apt/lists/*
  fi
  PY="$(find_python || true)"
fi
if [ -z "$PY" ]; then
  echo "semif: no Python >= 3.11 in this image and neither dnf nor apt-get could install one" >&2
  exit 1
fi
echo "semif: using $PY ($("$PY" --version 2>&1))"

if "$PY" -m venv "$VENV" >/dev/null 2>&1; then
  PIP=("$VENV/bin/python" -m pip)
else  # e.g. Debian without python3-venv: a venv without pip, filled by the system pip
  rm -rf "$VENV"
  "$PY" -m venv --without-pip "$VENV"
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    echo "semif: $PY has neither ensurepip nor pip; install its pip package in the base image" >&2
    exit 1
  fi
  PIP=("$PY" -m pip --python "$VENV/bin/python")
fi
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

"${PIP[@]}" install --quiet -r "$SRC/container/requirements.txt"
"${PIP[@]}" install --quiet --no-deps "$SRC"

BINDING="$("$VENV/bin/python" -m semif_lib.serving.llamabinding binding-for)"
echo "semif: llama-cpp-python $BINDING fits this image's llama.cpp"
work="$(mktemp -d)"
"${PIP[@]}" download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python==${BINDING}" -d "$work"
tar xzf "$work/llama_cpp_python-${BINDING}.tar.gz" -C "$work"
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp -a "$work/llama_cpp_python-${BINDING}/llama_cpp" "$site/"
rm -rf "$work"
if find "$VENV" -name 'libllama*.so*' | grep -q .; then
  echo "semif: the binding brought its own libllama; it must use the DLC's" >&2
  exit 1
fi

"$VENV/bin/python" -m semif_lib.serving.llamabinding check
