// Masked greedy / sampling on the CPU (see masked_sampling.h for the semantics).
//
// A row is read in chunks of 256 tokens (8 mask words). Greedy: one pass of masked chunk
// maxima, then the first chunk holding the row maximum is searched alone. Sampling: one
// pass of masked word maxima (32 tokens), then rejection from an envelope over the words
// (only the word maxima are exponentiated; SampleByEnvelope). Its fallback, and top-p,
// draw by the inverse CDF over chunk masses (sums of exp((x - M) / T) over the kept
// tokens, skipping chunks whose maximum is so far below M that every weight is 0 in
// float): one uniform picks a chunk, then a token inside it, its weights recomputed
// (top-p's later chunk masses come from word sums: the two levels can differ in the last
// bits, and a draw past the chunk's recomputed weights takes its last weighted token).
// top-k takes the k-th largest value among the words with the k largest maxima. The
// inner loops have an AVX2 version (chosen at run time) and a portable one with the same
// arithmetic up to the exp.
#include "sampling/masked_sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XGR2_X86 1
#endif

namespace xgr2 {
namespace {

constexpr int64_t kChunk = 256;             // tokens per chunk
constexpr int64_t kWords = kChunk / 32;     // mask words per chunk
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();
// exp(z) for z below this is flushed to 0 (float's smallest normal is exp(-87.34)).
constexpr float kExpFloor = -87.0f;

// What a chunk's weights keep: allowed, x >= tau, (x - M) * inv_temp >= log_min_p.
struct Keep {
  float row_max, inv_temp, tau, log_min_p;
};

// exp(z) for z <= 0 (z < kExpFloor: 0): 2^n * p(r), r = z - n ln2 in [-ln2/2, ln2/2],
// p of degree 6 (relative error ~2e-7). The portable and AVX2 versions share it.
inline float ExpNonPositive(float z) {
  if (!(z >= kExpFloor)) return 0.0f;
  float n = std::nearbyint(z * 1.44269504088896341f);
  float r = z - n * 0.693145751953125f - n * 1.42860682030941723e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline bool Bit(const uint32_t* words, int64_t t) { return (words[t >> 5] >> (t & 31)) & 1u; }

// ------------------------------------------------------------------------ portable
float ChunkMaxPortable(const float* x, const uint32_t* words, int64_t n) {
  float m = kNegInf;
  for (int64_t t = 0; t < n; ++t) {
    if (Bit(words, t) && x[t] > m) m = x[t];  // NaN never compares greater
  }
  return m;
}

float ChunkWeightsPortable(const float* x, const uint32_t* words, int64_t n, const Keep& k, float* out) {
  float mass = 0;
  for (int64_t t = 0; t < n; ++t) {
    float w = 0;
    if (Bit(words, t) && x[t] >= k.tau) {
      float z = (x[t] - k.row_max) * k.inv_temp;
      if (z >= k.log_min_p) w = ExpNonPositive(z);
    }
    if (out) out[t] = w;
    mass += w;
  }
  return mass;
}

// The weights `wt` (computed before: 0 where the mask or an earlier cut drops the token)
// of n tokens with x >= tau summed: into *all, and into *min_p those that also pass the
// min-p cut. No exp: a comparison per token.
void WordMassFromPortable(const float* x, const float* wt, int64_t n, const Keep& k, float tau, float* all,
                          float* min_p) {
  for (int64_t t = 0; t < n; ++t) {
    if (!(x[t] >= tau)) continue;
    *all += wt[t];
    if ((x[t] - k.row_max) * k.inv_temp >= k.log_min_p) *min_p += wt[t];
  }
}

// ------------------------------------------------------------------------ AVX2
#ifdef XGR2_X86
__attribute__((target("avx2,fma"))) inline __m256 LaneMask(uint32_t word, int quarter) {
  const __m256i lanes = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  __m256i lane = _mm256_slli_epi32(lanes, 8 * quarter);
  __m256i bits = _mm256_set1_epi32(static_cast<int32_t>(word));
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(bits, lane), lane));
}

__attribute__((target("avx2,fma"))) inline float HorizontalMax(__m256 m) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

// The masked maximum of 32 tokens folded into `m` (a NaN logit leaves `m`: max returns
// its second operand when either is NaN).
__attribute__((target("avx2,fma"))) inline __m256 MaxOfWord(const float* x, uint32_t word, __m256 m) {
  const __m256 ninf = _mm256_set1_ps(kNegInf);
  for (int q = 0; q < 4; ++q) {
    m = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_loadu_ps(x + 8 * q), LaneMask(word, q)), m);
  }
  return m;
}

__attribute__((target("avx2,fma"))) float ChunkMaxAvx2(const float* x, const uint32_t* words) {
  __m256 m = _mm256_set1_ps(kNegInf);
  for (int64_t w = 0; w < kWords; ++w) m = MaxOfWord(x + 32 * w, words[w], m);
  return HorizontalMax(m);
}

// The masked maximum of each of a chunk's 8 words.
__attribute__((target("avx2,fma"))) void WordMaximaAvx2(const float* x, const uint32_t* words, float* out) {
  for (int64_t w = 0; w < kWords; ++w) {
    out[w] = words[w] ? HorizontalMax(MaxOfWord(x + 32 * w, words[w], _mm256_set1_ps(kNegInf))) : kNegInf;
  }
}

// ExpNonPositive with fused multiply-adds (~13 instructions for 8 lanes: the weight
// passes are bound by this).
__attribute__((target("avx2,fma"))) inline __m256 ExpNonPositiveAvx2(__m256 z) {
  __m256 n = _mm256_round_ps(_mm256_mul_ps(z, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), z);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-6f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.0f / 720), r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  // z >= kExpFloor is false for NaN and -inf too: 0.
  return _mm256_and_ps(e, _mm256_cmp_ps(z, _mm256_set1_ps(kExpFloor), _CMP_GE_OQ));
}

__attribute__((target("avx2,fma"))) float ChunkWeightsAvx2(const float* x, const uint32_t* words, const Keep& k,
                                                            float* out) {
  const __m256 row_max = _mm256_set1_ps(k.row_max), inv_temp = _mm256_set1_ps(k.inv_temp);
  const __m256 tau = _mm256_set1_ps(k.tau), log_min_p = _mm256_set1_ps(k.log_min_p);
  const bool cuts = k.tau > kNegInf || k.log_min_p > kNegInf;  // else only the mask bits keep
  __m256 mass = _mm256_setzero_ps();
  for (int64_t w = 0; w < kWords; ++w) {
    if (!words[w]) {
      if (out) std::memset(out + 32 * w, 0, 32 * sizeof(float));
      continue;
    }
    for (int q = 0; q < 4; ++q) {
      __m256 v = _mm256_loadu_ps(x + 32 * w + 8 * q);
      __m256 z = _mm256_mul_ps(_mm256_sub_ps(v, row_max), inv_temp);
      __m256 keep = LaneMask(words[w], q);
      if (cuts) {
        keep = _mm256_and_ps(keep, _mm256_cmp_ps(v, tau, _CMP_GE_OQ));
        keep = _mm256_and_ps(keep, _mm256_cmp_ps(z, log_min_p, _CMP_GE_OQ));
      }
      __m256 e = _mm256_and_ps(ExpNonPositiveAvx2(z), keep);
      if (out) _mm256_storeu_ps(out + 32 * w + 8 * q, e);
      mass = _mm256_add_ps(mass, e);
    }
  }
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(mass), _mm256_extractf128_ps(mass, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

// WordMassFromPortable for 32 tokens.
__attribute__((target("avx2,fma"))) void WordMassFromAvx2(const float* x, const float* wt, const Keep& k, float tau,
                                                           float* all, float* min_p) {
  const __m256 vtau = _mm256_set1_ps(tau), row_max = _mm256_set1_ps(k.row_max);
  const __m256 inv_temp = _mm256_set1_ps(k.inv_temp), log_min_p = _mm256_set1_ps(k.log_min_p);
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  for (int q = 0; q < 4; ++q) {
    __m256 v = _mm256_loadu_ps(x + 8 * q);
    __m256 e = _mm256_and_ps(_mm256_loadu_ps(wt + 8 * q), _mm256_cmp_ps(v, vtau, _CMP_GE_OQ));
    __m256 z = _mm256_mul_ps(_mm256_sub_ps(v, row_max), inv_temp);
    a = _mm256_add_ps(a, e);
    b = _mm256_add_ps(b, _mm256_and_ps(e, _mm256_cmp_ps(z, log_min_p, _CMP_GE_OQ)));
  }
  __m256 ab = _mm256_hadd_ps(a, b);  // lanes: a0+a1 a2+a3 b0+b1 b2+b3 | a4+a5 a6+a7 b4+b5 b6+b7
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(ab), _mm256_extractf128_ps(ab, 1));
  *all += h[0] + h[1];
  *min_p += h[2] + h[3];
}

// The envelope weights popcount(word) * exp((wmax - M) / T) of a chunk's 8 words, 0 where
// the word maximum is not kept (below tau or the min-p cut).
__attribute__((target("avx2,fma"))) void EnvelopeAvx2(const float* wmax, const uint32_t* words, const Keep& k,
                                                       float* out) {
  __m256 v = _mm256_loadu_ps(wmax);
  __m256 z = _mm256_mul_ps(_mm256_sub_ps(v, _mm256_set1_ps(k.row_max)), _mm256_set1_ps(k.inv_temp));
  __m256 keep = _mm256_and_ps(_mm256_cmp_ps(v, _mm256_set1_ps(k.tau), _CMP_GE_OQ),
                              _mm256_cmp_ps(z, _mm256_set1_ps(k.log_min_p), _CMP_GE_OQ));
  __m256 counts = _mm256_setr_ps(__builtin_popcount(words[0]), __builtin_popcount(words[1]),
                                 __builtin_popcount(words[2]), __builtin_popcount(words[3]),
                                 __builtin_popcount(words[4]), __builtin_popcount(words[5]),
                                 __builtin_popcount(words[6]), __builtin_popcount(words[7]));
  _mm256_storeu_ps(out, _mm256_and_ps(_mm256_mul_ps(ExpNonPositiveAvx2(z), counts), keep));
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

// ------------------------------------------------------------------------ a row
// A row's logits and mask words, the words copied into the scratch with bits of ids >=
// vocab cleared and padded to whole chunks (all ones where the row is unconstrained).
struct Row {
  const float* x;
  int64_t vocab, chunks;
  const uint32_t* words;

  Row(const float* logits, const uint32_t* mask, int64_t n, bool constrained, std::vector<uint32_t>* storage)
      : x(logits), vocab(n), chunks((n + kChunk - 1) / kChunk) {
    storage->assign(chunks * kWords, 0);
    int64_t used = (n + 31) / 32;
    for (int64_t w = 0; w < used; ++w) (*storage)[w] = constrained ? mask[w] : 0xFFFFFFFFu;
    if (n % 32) (*storage)[used - 1] &= (1u << (n % 32)) - 1;
    words = storage->data();
  }
  bool Allowed(int64_t t) const { return Bit(words, t); }
  int64_t ChunkSize(int64_t c) const { return std::min(kChunk, vocab - c * kChunk); }
  const uint32_t* ChunkWords(int64_t c) const { return words + c * kWords; }

  float ChunkMax(int64_t c) const {
#ifdef XGR2_X86
    if (ChunkSize(c) == kChunk && HasAvx2()) return ChunkMaxAvx2(x + c * kChunk, ChunkWords(c));
#endif
    return ChunkMaxPortable(x + c * kChunk, ChunkWords(c), ChunkSize(c));
  }
  // The masked maximum of each word of chunk c (kWords entries).
  void WordMaxima(int64_t c, float* out) const {
#ifdef XGR2_X86
    if (ChunkSize(c) == kChunk && HasAvx2()) return WordMaximaAvx2(x + c * kChunk, ChunkWords(c), out);
#endif
    for (int64_t w = 0; w < kWords; ++w) {
      int64_t begin = std::min(vocab, c * kChunk + 32 * w), end = std::min(vocab, begin + 32);
      out[w] = ChunkMaxPortable(x + begin, ChunkWords(c) + w, end - begin);
    }
  }
  void Envelope(int64_t c, const float* wmax, const Keep& k, float* out) const {
#ifdef XGR2_X86
    if (HasAvx2()) return EnvelopeAvx2(wmax, ChunkWords(c), k, out);
#endif
    for (int64_t w = 0; w < kWords; ++w) {
      float z = (wmax[w] - k.row_max) * k.inv_temp;
      bool kept = wmax[w] >= k.tau && z >= k.log_min_p;
      out[w] = kept ? __builtin_popcount(ChunkWords(c)[w]) * ExpNonPositive(z) : 0.0f;
    }
  }
  float ChunkWeights(int64_t c, const Keep& k, float* out) const {
#ifdef XGR2_X86
    if (ChunkSize(c) == kChunk && HasAvx2()) return ChunkWeightsAvx2(x + c * kChunk, ChunkWords(c), k, out);
#endif
    return ChunkWeightsPortable(x + c * kChunk, ChunkWords(c), ChunkSize(c), k, out);
  }
  // WordMassFromPortable over word w (0-based in the row); `wt`: the row's token weights.
  void WordMassFrom(int64_t w, const float* wt, const Keep& k, float tau, float* all, float* min_p) const {
    int64_t begin = 32 * w;
#ifdef XGR2_X86
    if (begin + 32 <= vocab && HasAvx2()) return WordMassFromAvx2(x + begin, wt + begin, k, tau, all, min_p);
#endif
    WordMassFromPortable(x + begin, wt + begin, std::min<int64_t>(32, vocab - begin), k, tau, all, min_p);
  }
  int64_t FirstAllowed() const {
    for (int64_t w = 0; w < chunks * kWords; ++w) {
      if (words[w]) return w * 32 + __builtin_ctz(words[w]);
    }
    return -1;
  }
};

// Row maximum from the word maxima (filled into `wmax`, and their chunk maxima into `cm`).
float WordAndChunkMaxima(const Row& row, std::vector<float>* wmax, std::vector<float>* cm) {
  wmax->resize(row.chunks * kWords);
  cm->resize(row.chunks);
  float m = kNegInf;
  for (int64_t c = 0; c < row.chunks; ++c) {
    float* w = wmax->data() + c * kWords;
    row.WordMaxima(c, w);
    float chunk = kNegInf;
    for (int64_t i = 0; i < kWords; ++i) chunk = std::max(chunk, w[i]);
    (*cm)[c] = chunk;
    m = std::max(m, chunk);
  }
  return m;
}

// Row maximum from the chunk maxima (filled into `cm`).
float ChunkMaxima(const Row& row, std::vector<float>* cm) {
  cm->resize(row.chunks);
  float m = kNegInf;
  for (int64_t c = 0; c < row.chunks; ++c) {
    (*cm)[c] = row.ChunkMax(c);
    m = std::max(m, (*cm)[c]);
  }
  return m;
}

int32_t ArgmaxFromChunks(const Row& row, const std::vector<float>& cm, float m) {
  if (m == kNegInf) return static_cast<int32_t>(row.FirstAllowed());
  for (int64_t c = 0; c < row.chunks; ++c) {
    if (cm[c] != m) continue;
    for (int64_t t = c * kChunk; t < c * kChunk + row.ChunkSize(c); ++t) {
      if (row.Allowed(t) && row.x[t] == m) return static_cast<int32_t>(t);
    }
  }
  return static_cast<int32_t>(row.FirstAllowed());  // not reached
}

// The k-th largest allowed value (-inf when fewer than k are finite or +inf).
//
// The k words with the largest maxima hold the k largest values: every value above the
// k-th largest one lies in a word whose maximum is at least the k-th largest word
// maximum `mu`, and those words hold at least k values >= mu. The same holds for chunks,
// and mu is at least the chunks' `mu`, so the words are looked for in those chunks only.
float KthLargest(const Row& row, const std::vector<float>& cm, const std::vector<float>& wmax, int64_t k,
                 SamplingScratch* s) {
  auto kth = [](std::vector<float>* v, int64_t k) {
    if (static_cast<int64_t>(v->size()) < k) return kNegInf;
    std::nth_element(v->begin(), v->begin() + (k - 1), v->end(), std::greater<float>());
    return (*v)[k - 1];
  };
  std::vector<float>& values = s->values;
  values.clear();
  for (float v : cm) {
    if (v > kNegInf) values.push_back(v);
  }
  float mu_chunks = static_cast<int64_t>(values.size()) > k ? kth(&values, k) : kNegInf;
  values.clear();
  for (int64_t c = 0; c < row.chunks; ++c) {
    if (!(cm[c] > kNegInf) || cm[c] < mu_chunks) continue;
    for (int64_t w = c * kWords; w < (c + 1) * kWords; ++w) {
      if (wmax[w] > kNegInf) values.push_back(wmax[w]);
    }
  }
  float mu = static_cast<int64_t>(values.size()) > k ? kth(&values, k) : kNegInf;
  values.clear();
  for (int64_t c = 0; c < row.chunks; ++c) {
    if (!(cm[c] > kNegInf) || cm[c] < mu) continue;
    for (int64_t w = c * kWords; w < (c + 1) * kWords; ++w) {
      if (!(wmax[w] > kNegInf) || wmax[w] < mu) continue;
      for (uint32_t bits = row.words[w]; bits; bits &= bits - 1) {
        float x = row.x[w * 32 + __builtin_ctz(bits)];
        if (x >= mu && x > kNegInf) values.push_back(x);  // values below mu cannot be the k-th; NaN fails
      }
    }
  }
  return kth(&values, k);
}

// Whether chunk c (maximum cm_c) can hold a kept token of positive weight: its maximum
// passes tau, and the min-p cut and the exp floor (below them every weight is 0).
bool ChunkLive(float cm_c, const Keep& k) {
  return cm_c >= k.tau && (cm_c - k.row_max) * k.inv_temp >= std::max(kExpFloor, k.log_min_p);
}

// The mass of the kept tokens: per chunk into `mass` (if given), and in all; each live
// chunk's token weights into `weights` (if given; kChunk per chunk).
double ChunkMasses(const Row& row, const std::vector<float>& cm, const Keep& k, std::vector<float>* mass,
                   float* weights = nullptr) {
  double total = 0;
  if (mass) mass->assign(row.chunks, 0.0f);
  for (int64_t c = 0; c < row.chunks; ++c) {
    if (!ChunkLive(cm[c], k)) continue;
    float m = row.ChunkWeights(c, k, weights ? weights + c * kChunk : nullptr);
    if (mass) (*mass)[c] = m;
    total += m;
  }
  return total;
}

// splitmix64: the row's random stream, seeded by 64 bits from jax.random.
struct Random {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

constexpr int kMaxProposals = 64;
// Bound on top-p rounds (each strictly raises the pivot); past it the last candidate.
constexpr int kMaxTopPRounds = 128;

// Rejection sampling from an envelope over the words: word w proposes each of its n_w
// allowed tokens with weight e_w = exp((wmax_w - M) / T); token t is accepted with
// probability exp((x_t - wmax_w) / T), so accepted tokens follow exp((x_t - M) / T)
// exactly (and tokens the keep predicate drops are rejected). Only the word maxima are
// exponentiated. Returns -1 after kMaxProposals rejections (the caller then draws
// exactly by the inverse CDF with fresh randomness, which keeps the result exact).
int32_t SampleByEnvelope(const Row& row, const std::vector<float>& cm, const std::vector<float>& wmax, const Keep& k,
                         Random* rng, SamplingScratch* s) {
  std::vector<float>& cum = s->weights;  // cumulative envelope mass per word
  int64_t n_words = row.chunks * kWords;
  cum.resize(n_words);
  double total = 0;
  for (int64_t c = 0; c < row.chunks; ++c) {
    float envelope[kWords] = {0};
    if (ChunkLive(cm[c], k)) row.Envelope(c, wmax.data() + c * kWords, k, envelope);
    for (int64_t w = 0; w < kWords; ++w) {
      total += envelope[w];
      cum[c * kWords + w] = static_cast<float>(total);
    }
  }
  for (int proposal = 0; proposal < kMaxProposals; ++proposal) {
    float target = static_cast<float>(rng->Uniform() * total);
    int64_t w = std::upper_bound(cum.begin(), cum.end(), target) - cum.begin();
    if (w >= n_words) continue;  // rounding at the end
    uint32_t bits = row.words[w];
    int n = __builtin_popcount(bits);
    if (n == 0) continue;
    for (int j = static_cast<int>(rng->Uniform() * n); j > 0; --j) bits &= bits - 1;  // the j-th set bit
    int64_t t = w * 32 + __builtin_ctz(bits);
    float x = row.x[t];
    float z = (x - k.row_max) * k.inv_temp;
    if (!(x >= k.tau) || !(z >= k.log_min_p) || !(z >= kExpFloor)) continue;
    if (rng->Uniform() < std::exp(static_cast<double>(x - wmax[w]) * k.inv_temp)) return static_cast<int32_t>(t);
  }
  return -1;
}

// Inverse-CDF draw over the chunk masses, then inside the chosen chunk.
int32_t Draw(const Row& row, const std::vector<float>& mass, const Keep& k, float u) {
  double total = 0;
  for (float m : mass) total += m;
  double target = static_cast<double>(u) * total;
  int64_t chunk = -1, last = -1;
  double before = 0;
  for (int64_t c = 0; c < row.chunks; ++c) {
    if (!(mass[c] > 0)) continue;
    last = c;
    if (before + mass[c] > target) {
      chunk = c;
      break;
    }
    before += mass[c];
  }
  if (last < 0) return -1;  // no weight at all
  if (chunk < 0) {  // rounding past the end: the last chunk with weight
    chunk = last;
    before = total - mass[last];
  }
  float weights[kChunk];
  row.ChunkWeights(chunk, k, weights);
  double cum = before;
  int64_t pick = -1;
  for (int64_t t = 0; t < row.ChunkSize(chunk); ++t) {
    if (!(weights[t] > 0)) continue;
    pick = t;
    cum += weights[t];
    if (cum > target) break;
  }
  return pick < 0 ? -1 : static_cast<int32_t>(chunk * kChunk + pick);
}

// top-p by rejection with a rising pivot (as the pure-JAX path): draw t from the kept
// distribution restricted to logits above the pivot; t is in the top-p set iff the
// top-k-kept mass strictly above x_t is below top_p * Z. Else the pivot rises to x_t
// (the top-p set lies above it) and the draw repeats. The top-p set and the min-p set
// are both upper sets of the logits, so the accepted token follows the kept
// distribution restricted to their intersection exactly.
//
// One pass over the live chunks gives Z and keeps every token's weight; a round then sums
// the kept weights (no exp) only over the 32-token words whose maximum is above the pivot,
// and that sum, per chunk, is also the next round's draw mass.
int32_t SampleTopP(const Row& row, const std::vector<float>& cm, const std::vector<float>& wmax, const Keep& keep,
                   float top_p, Random* rng, SamplingScratch* s) {
  Keep topk = keep;
  topk.log_min_p = kNegInf;  // top-p applies before min-p
  std::vector<float>& all = s->chunk_mass;     // per chunk: the mass above the pivot
  std::vector<float>& kept = s->chunk_mass_b;  // the same within the min-p cut
  kept.assign(row.chunks, 0.0f);
  s->token_weights.resize(row.chunks * kChunk);
  float* wt = s->token_weights.data();
  double need = std::max(top_p, 1e-30f) * ChunkMasses(row, cm, topk, &all, wt);
  bool has_min_p = keep.log_min_p > kNegInf;
  // Per chunk, the mass of tokens with x >= tau (all and within min-p); the total of the
  // former.
  auto masses_from = [&](float tau) {
    tau = std::max(tau, topk.tau);
    double sum = 0;
    for (int64_t c = 0; c < row.chunks; ++c) {
      float a = 0, b = 0;
      if (ChunkLive(cm[c], topk) && cm[c] >= tau) {
        for (int64_t w = c * kWords; w < (c + 1) * kWords; ++w) {
          if (wmax[w] >= tau) row.WordMassFrom(w, wt, keep, tau, &a, &b);
        }
      }
      all[c] = a;
      kept[c] = b;
      sum += a;
    }
    return sum;
  };
  if (has_min_p) masses_from(kNegInf);
  int32_t t = -1;
  float pivot = kNegInf;
  for (int round = 0; round < kMaxTopPRounds; ++round) {
    Keep draw = keep;
    if (pivot > kNegInf) draw.tau = std::max(keep.tau, std::nextafter(pivot, kPosInf));
    int32_t next = Draw(row, has_min_p ? kept : all, draw, static_cast<float>(rng->Uniform()));
    if (next < 0) break;  // nothing above the pivot (not reached: the maximum always passes)
    t = next;
    if (masses_from(std::nextafter(row.x[t], kPosInf)) < need) return t;
    pivot = row.x[t];
  }
  return t;  // past the bound on rounds: the last candidate
}

}  // namespace

int32_t MaskedArgmax(const float* logits, const uint32_t* words, int64_t vocab, bool constrained,
                     SamplingScratch* scratch) {
  Row row(logits, words, vocab, constrained, &scratch->words);
  float m = ChunkMaxima(row, &scratch->chunk_max);
  return ArgmaxFromChunks(row, scratch->chunk_max, m);
}

int32_t MaskedSample(const float* logits, const uint32_t* words, int64_t vocab, bool constrained,
                     const SamplingParams& params, uint64_t seed, SamplingScratch* s) {
  Random rng{seed};
  Row row(logits, words, vocab, constrained, &s->words);
  std::vector<float>& cm = s->chunk_max;
  // Sampling rows need the word maxima (the envelope): one pass gives both.
  float m = params.temperature > 0 ? WordAndChunkMaxima(row, &s->word_max, &cm) : ChunkMaxima(row, &cm);
  if (!(params.temperature > 0) || m == kNegInf) return ArgmaxFromChunks(row, cm, m);
  if (m == kPosInf) {  // uniform among the +inf tokens
    int64_t count = 0;
    for (int64_t t = 0; t < vocab; ++t) count += row.Allowed(t) && logits[t] == kPosInf;
    int64_t pick = std::min<int64_t>(static_cast<int64_t>(rng.Uniform() * count), count - 1);
    for (int64_t t = 0; t < vocab; ++t) {
      if (row.Allowed(t) && logits[t] == kPosInf && pick-- == 0) return static_cast<int32_t>(t);
    }
  }
  Keep keep{m, 1.0f / params.temperature, kNegInf, kNegInf};
  if (!std::isfinite(keep.inv_temp)) return ArgmaxFromChunks(row, cm, m);  // T below float's range
  if (params.top_k >= 1) keep.tau = KthLargest(row, cm, s->word_max, params.top_k, s);
  if (params.min_p > 0) keep.log_min_p = std::log(std::min(params.min_p, 1.0f));
  if (params.top_p < 1) {
    int32_t t = SampleTopP(row, cm, s->word_max, keep, params.top_p, &rng, s);
    return t >= 0 ? t : ArgmaxFromChunks(row, cm, m);
  }
  int32_t t = SampleByEnvelope(row, cm, s->word_max, keep, &rng, s);
  if (t >= 0) return t;
  // 64 rejections: the exact inverse-CDF draw, with fresh randomness.
  ChunkMasses(row, cm, keep, &s->chunk_mass);
  t = Draw(row, s->chunk_mass, keep, static_cast<float>(rng.Uniform()));
  return t >= 0 ? t : ArgmaxFromChunks(row, cm, m);
}

}  // namespace xgr2
