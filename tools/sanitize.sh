#!/usr/bin/env bash
# Builds the engine with AddressSanitizer + UndefinedBehaviorSanitizer (or, with
# `thread`, ThreadSanitizer) into build/<san>/ and runs the oracle, bad-input, batch and
# concurrency tests against it. Not in CI (a sanitized build and run take minutes).
#
#   tools/sanitize.sh            # ASan + UBSan
#   tools/sanitize.sh thread     # TSan on the thread-pool, batch and serving tests
#
# TSan preloaded into an uninstrumented CPython needs a kernel and libtsan that agree on
# the memory layout: on the 2-core dev VM (gcc 12, Linux 6.18) even `python -c 'print(1)'`
# segfaults under it, with or without ASLR; the ASan + UBSan run works there.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-address}"
if [[ "$kind" == thread ]]; then
  flags="-fsanitize=thread -g -O1"
  runtime="$(gcc -print-file-name=libtsan.so)"
  tests=(tests/test_batch.py tests/test_serving.py tests/test_mask_reference.py -k "thread or concurrent or background or batch")
else
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
  runtime="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  tests=(tests/test_mask_oracle.py tests/test_mask_reference.py tests/test_bad_input.py tests/test_batch.py
         tests/test_serving.py tests/test_state_memory.py tests/test_tree_masks.py tests/test_tag_dispatch.py)
fi
build="build/san-$kind"
cmake -S . -B "$build" -G Ninja -DSKBUILD=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -Dnanobind_DIR="$(python -m nanobind --cmake_dir)" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" >/dev/null
ninja -C "$build"
# A copy of the package and tests with the sanitized engine (tests/conftest.py keeps a
# tree with a built engine on sys.path), so the source tree's own link is untouched.
pkg="$(mktemp -d)"
trap 'rm -rf "$pkg"' EXIT
cp -r xgr2 tests "$pkg/"
rm -f "$pkg"/xgr2/_core*.so
cp "$build"/_core*.so "$pkg/xgr2/"
cd "$pkg"
# ASan frames are several times larger: the recursive EBNF parser's documented nesting
# limit (1,000 parentheses) needs more than the default 8 MB stack under it.
[[ "$kind" == thread ]] || ulimit -s 1048576
# Python itself is not instrumented: preload the runtime; CPython's allocator and
# interned objects look like leaks to LeakSanitizer, so leak checking is off.
export LD_PRELOAD="$runtime"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
python -m pytest -q -p no:cacheprovider -x "${tests[@]}"
