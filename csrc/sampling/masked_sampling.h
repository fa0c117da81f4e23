// Masked greedy and sampling on the CPU, one row at a time: the kernels behind
// xgr2.jax.greedy / sample when JAX runs on the CPU (bound as XLA FFI targets in
// csrc/bindings/xla_ffi.cc). Same semantics as the pure-JAX path (xgr2/jax/_sampling.py):
//   * token t is allowed iff bit t % 32 of word t / 32 is set (or the row is not
//     constrained) and t < vocab; NaN logits count as -inf;
//   * greedy: the first allowed token with the largest logit; if every allowed logit is
//     -inf / NaN, the first allowed token; none allowed: -1;
//   * sampling: p(t) ~ exp((x_t - M) / T) over the kept tokens, M the largest allowed
//     logit; kept: allowed, x >= the k-th largest allowed logit (top-k, ties kept), then
//     the smallest set of largest logits whose mass (top-k renormalised) reaches top_p
//     (ties kept), then (x - M) / T >= log(min_p); drawn by rejection from an envelope
//     over the 32-token words (past a bound on rejections, and for top-p, by the inverse
//     CDF over chunk masses), from a random stream seeded by `seed`. A +inf maximum
//     samples uniformly among the +inf tokens; no finite allowed logit falls back to
//     greedy.
#pragma once
#include <cstdint>
#include <vector>

namespace xgr2 {

struct SamplingParams {
  float temperature = 1;  // <= 0: greedy
  int32_t top_k = 0;      // < 1: off
  float top_p = 1;        // >= 1: off
  float min_p = 0;        // <= 0: off
};

// Scratch reused across rows (per thread).
struct SamplingScratch {
  std::vector<uint32_t> words;  // the row's mask, padded to whole chunks
  std::vector<float> chunk_max, word_max, chunk_mass, chunk_mass_b, values, weights;
  std::vector<float> token_weights;  // top-p: each token's weight, computed once per row
};

// `words` holds ceil(vocab / 32) words or more; bits of ids >= vocab are ignored.
// `constrained` false allows every id < vocab.
int32_t MaskedArgmax(const float* logits, const uint32_t* words, int64_t vocab, bool constrained,
                     SamplingScratch* scratch);

int32_t MaskedSample(const float* logits, const uint32_t* words, int64_t vocab, bool constrained,
                     const SamplingParams& params, uint64_t seed, SamplingScratch* scratch);

}  // namespace xgr2
