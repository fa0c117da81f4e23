// XLA FFI targets for xgr2.jax.greedy / sample on the CPU (csrc/sampling/masked_sampling.h).
// Built only when jaxlib's FFI headers were found at build time (XGR2_XLA_FFI); the
// Python side registers them with jax.ffi.register_ffi_target and falls back to the
// pure-JAX path without them. Rows run in parallel on the shared thread pool.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "sampling/masked_sampling.h"
#include "support/thread_pool.h"

#ifdef XGR2_XLA_FFI
#include "xla/ffi/api/ffi.h"
#endif

namespace nb = nanobind;

namespace xgr2 {
namespace {

#ifdef XGR2_XLA_FFI
namespace ffi = xla::ffi;

// Rows below this many logits in all run on the calling thread (a pool hand-off costs
// more than the row).
constexpr int64_t kParallelLogits = 1 << 18;

template <typename RowFn>
ffi::Error ForEachRow(int64_t batch, int64_t vocab, RowFn row_fn) {
  auto one = [&](int64_t b) {
    thread_local SamplingScratch scratch;
    row_fn(b, &scratch);
  };
  if (batch < 2 || batch * vocab < kParallelLogits) {
    for (int64_t b = 0; b < batch; ++b) one(b);
  } else {
    ParallelFor(batch, 0, one);
  }
  return ffi::Error::Success();
}

ffi::Error CheckShapes(const ffi::AnyBuffer::Dimensions& logits, const ffi::AnyBuffer::Dimensions& mask) {
  if (logits.size() != 2 || mask.size() != 2 || logits[0] != mask[0] || mask[1] * 32 < logits[1]) {
    return ffi::Error::InvalidArgument("xgr2 sampling: expected logits [B, V] and bitmask [B, W >= V / 32]");
  }
  return ffi::Error::Success();
}

ffi::Error GreedyImpl(ffi::Buffer<ffi::F32> logits, ffi::Buffer<ffi::S32> mask, ffi::Buffer<ffi::PRED> constrained,
                      ffi::ResultBuffer<ffi::S32> out) {
  if (ffi::Error e = CheckShapes(logits.dimensions(), mask.dimensions()); e.failure()) return e;
  int64_t batch = logits.dimensions()[0], vocab = logits.dimensions()[1], words = mask.dimensions()[1];
  return ForEachRow(batch, vocab, [&](int64_t b, SamplingScratch* s) {
    out->typed_data()[b] = MaskedArgmax(logits.typed_data() + b * vocab,
                                        reinterpret_cast<const uint32_t*>(mask.typed_data() + b * words), vocab,
                                        constrained.typed_data()[b], s);
  });
}

// splitmix64's finaliser: a 64-bit mix.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Row b's seed from the key's words: a hash of the key, mixed with a hash of b (not b
// times a constant: splitmix streams seeded a constant apart overlap). Computed here
// because jax.random.bits inside the jitted call cost 40-70 us at B = 8 on this CPU,
// more than the kernel.
uint64_t RowSeed(const uint32_t* key, int64_t key_words, int64_t b) {
  uint64_t h = 0x6A09E667F3BCC909ull;
  for (int64_t i = 0; i < key_words; ++i) h = Mix64(h ^ (key[i] + 0x9E3779B97F4A7C15ull));
  return Mix64(h ^ Mix64(static_cast<uint64_t>(b) + 0x243F6A8885A308D3ull));
}

ffi::Error SampleImpl(ffi::Buffer<ffi::F32> logits, ffi::Buffer<ffi::S32> mask, ffi::Buffer<ffi::PRED> constrained,
                      ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::F32> temperature, ffi::Buffer<ffi::S32> top_k,
                      ffi::Buffer<ffi::F32> top_p, ffi::Buffer<ffi::F32> min_p, ffi::ResultBuffer<ffi::S32> out) {
  if (ffi::Error e = CheckShapes(logits.dimensions(), mask.dimensions()); e.failure()) return e;
  int64_t batch = logits.dimensions()[0], vocab = logits.dimensions()[1], words = mask.dimensions()[1];
  return ForEachRow(batch, vocab, [&](int64_t b, SamplingScratch* s) {
    SamplingParams p{temperature.typed_data()[b], top_k.typed_data()[b], top_p.typed_data()[b],
                     min_p.typed_data()[b]};
    out->typed_data()[b] = MaskedSample(logits.typed_data() + b * vocab,
                                        reinterpret_cast<const uint32_t*>(mask.typed_data() + b * words), vocab,
                                        constrained.typed_data()[b], p,
                                        RowSeed(key.typed_data(), static_cast<int64_t>(key.element_count()), b), s);
  });
}

XLA_FFI_DEFINE_HANDLER(kGreedy, GreedyImpl,
                       ffi::Ffi::Bind()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Arg<ffi::Buffer<ffi::S32>>()
                           .Arg<ffi::Buffer<ffi::PRED>>()
                           .Ret<ffi::Buffer<ffi::S32>>());

XLA_FFI_DEFINE_HANDLER(kSample, SampleImpl,
                       ffi::Ffi::Bind()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Arg<ffi::Buffer<ffi::S32>>()
                           .Arg<ffi::Buffer<ffi::PRED>>()
                           .Arg<ffi::Buffer<ffi::U32>>()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Arg<ffi::Buffer<ffi::S32>>()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Arg<ffi::Buffer<ffi::F32>>()
                           .Ret<ffi::Buffer<ffi::S32>>());
#endif

}  // namespace

void BindXlaFfi(nb::module_& m) {
  // {name: PyCapsule of the handler} for jax.ffi.register_ffi_target(platform="cpu");
  // empty when the extension was built without jaxlib's FFI headers.
  m.def("xla_ffi_targets", []() {
    nb::typed<nb::dict, nb::str, nb::capsule> targets;
#ifdef XGR2_XLA_FFI
    targets["xgr2_masked_greedy"] = nb::capsule(reinterpret_cast<void*>(kGreedy), static_cast<const char*>(nullptr));
    targets["xgr2_masked_sample"] = nb::capsule(reinterpret_cast<void*>(kSample), static_cast<const char*>(nullptr));
#endif
    return targets;
  });
}

}  // namespace xgr2
