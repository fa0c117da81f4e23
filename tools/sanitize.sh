#!/usr/bin/env bash
# Builds the engine with AddressSanitizer + UndefinedBehaviorSanitizer (or, with
# `thread`, ThreadSanitizer) into build/<san>/ and runs the oracle, bad-input, batch and
# concurrency tests against it. Not in CI (a sanitized build and run take minutes).
#
#   tools/sanitize.sh            # ASan + UBSan
#   tools/sanitize.sh thread     # TSan on the thread-pool, batch and serving tests
#
# TSan preloaded into an uninstrumented CPython needs a runtime that knows the kernel's
# memory layout: gcc 12's libtsan segfaults on Linux 6.18 even for `python -c 'print(1)'`,
# LLVM 19's works. The TSan run therefore builds with clang++-19 (Debian: clang-19
# libclang-rt-19-dev); set SAN_CXX to use another clang.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-address}"
compiler=()
if [[ "$kind" == thread ]]; then
  cxx="${SAN_CXX:-clang++-19}"
  compiler=(-DCMAKE_CXX_COMPILER="$cxx")
  flags="-fsanitize=thread -g -O1"
  runtime="$("$cxx" -print-file-name=libclang_rt.tsan-x86_64.so)"
  tests=(tests/test_batch.py tests/test_serving.py tests/test_mask_reference.py tests/test_compiler_cache.py
         tests/test_mask_cache.py tests/test_tree_masks.py tests/test_immutability.py
         -k "not public_values_reject and not verify_tree_commit")  # those two run JAX
else
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
  runtime="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  tests=(tests/test_mask_oracle.py tests/test_mask_reference.py tests/test_bad_input.py tests/test_batch.py
         tests/test_serving.py tests/test_state_memory.py tests/test_tree_masks.py tests/test_tag_dispatch.py
         tests/test_regex_dfa.py tests/test_structural_tag.py tests/test_token_formats.py tests/test_structural_tag_xml.py
         tests/test_json_schema_keywords.py tests/test_counted_repetition.py tests/test_json_schema_resources.py
         tests/test_regex.py tests/test_repetition.py)
fi
build="build/san-$kind"
cmake -S . -B "$build" -G Ninja -DSKBUILD=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compiler[@]}" \
  -Dnanobind_DIR="$(python -m nanobind --cmake_dir)" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" >/dev/null
ninja -C "$build"
# A copy of the package and tests with the sanitized engine (tests/conftest.py keeps a
# tree with a built engine on sys.path), so the source tree's own link is untouched.
pkg="$(mktemp -d)"
trap 'rm -rf "$pkg"' EXIT
cp -r xgr2 tests docs "$pkg/"  # docs: the keyword table test reads docs/json_schema.md
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
# Other native libraries in the process are not instrumented: their own threads (the HF
# tokenizers' rayon pool, OpenBLAS, XLA) show as races TSan cannot judge, so they are
# suppressed by library, rayon runs on one thread, and the tests that run JAX are left out.
supp="$pkg/tsan.supp"
printf '%s\n' called_from_lib:tokenizers.abi3.so race:tokenizers.abi3.so race:libscipy_openblas \
  called_from_lib:libjax_common.so race:libjax_common.so >"$supp"
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp"
python -m pytest -q -p no:cacheprovider -x "${tests[@]}"
