#include "engine/looping_slice.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace xgr2 {
namespace {

// Below this many ASCII bytes a slice spares too little of the walk to pay its check.
constexpr int kMinSliceAscii = 32;
// The check gives up past this many (slice state, parser state) pairs, and past states
// of this many items (their signatures would cost more than the walk saves).
constexpr size_t kMaxPairs = 48;
constexpr size_t kMaxItems = 64;

// Where runs of bytes that step `set` alike begin: no item's node has a byte edge
// starting or ending inside a run, so every byte of it reaches the same items.
std::array<bool, 257> ByteCuts(EarleyParser& parser, const EarleySet& set) {
  const GrammarFsm& fsm = parser.fsm();
  parser.ReadAllByteEdges(set);
  std::array<bool, 257> cut{};
  cut[0] = cut[256] = true;
  for (const EarleyItem& it : set.items) {
    for (int32_t e = fsm.edge_begin[it.node]; e < fsm.rule_edge_begin[it.node]; ++e) {
      cut[fsm.edges[e].lo] = true;
      cut[fsm.edges[e].hi + 1] = true;
    }
  }
  return cut;
}

// Where the slice automaton's steps may change: the class's ASCII bytes, the bounds
// of Utf8Step's byte ranges. Between two cuts every byte steps every state alike.
std::array<bool, 257> SliceCuts(const SliceClass& first, const SliceClass& loop) {
  std::array<bool, 257> cut{};
  cut[0] = cut[256] = true;
  for (int b = 1; b < 0x80; ++b) {
    auto changes = [b](const SliceClass& c) { return c.HasAscii(static_cast<uint8_t>(b)) != c.HasAscii(static_cast<uint8_t>(b - 1)); };
    cut[b] = changes(first) || changes(loop);
  }
  for (int b : {0x80, 0x90, 0xA0, 0xC0, 0xC2, 0xE0, 0xE1, 0xED, 0xEE, 0xF0, 0xF1, 0xF4, 0xF5}) cut[b] = true;
  return cut;
}

// Whether every string of the slice's language parses from `start` (signature
// `start_sig`), where the first character, when ASCII, must also be in `first`.
bool Loops(EarleyParser& parser, const EarleySet& start, const std::string& start_sig, const SliceClass& first,
           const SliceClass& loop) {
  struct Pair {
    int state;
    bool began;  // past the first character
    const EarleySet* set;
    std::string sig;
  };
  const std::array<bool, 257> slice_cut = SliceCuts(first, loop);
  // With the same ASCII bytes first and after, the first character is like any other:
  // marking it begun keeps each state from being explored twice.
  bool same_first = first.ascii == loop.ascii;
  std::vector<std::unique_ptr<EarleySet>> owned;  // sets the pairs' items may point into
  std::vector<Pair> pairs{{0, same_first, &start, start_sig}};
  pairs.reserve(kMaxPairs);
  std::string sig;
  std::unique_ptr<EarleySet> out;  // the next step's set, kept only when it is a new pair
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair from = pairs[i];
    auto slice_step = [&](int b) {
      bool first_ascii = !from.began && from.state == 0 && b < 0x80;
      return first_ascii ? (first.HasAscii(static_cast<uint8_t>(b)) ? 0 : -1)
                         : SliceStep(loop, from.state, static_cast<uint8_t>(b));
    };
    std::array<bool, 257> cut = ByteCuts(parser, *from.set);
    // One step per run of bytes that behave alike: the slice's step is read once per
    // stretch between slice cuts, and stretches merge unless the parser cuts between.
    for (int b = 0, end; b < 256; b = end) {
      int next = slice_step(b);
      for (end = b + 1; end < 256 && !cut[end] && (!slice_cut[end] || slice_step(end) == next);) ++end;
      if (next < 0) continue;
      bool began = from.began || next == 0;
      if (!out) out = std::make_unique<EarleySet>();
      if (!parser.Advance(*from.set, static_cast<uint8_t>(b), out.get())) return false;
      if (!ParseSignature(*out, kMaxItems, &sig)) return false;
      bool seen = false;
      for (const Pair& p : pairs) seen |= p.state == next && p.began == began && p.sig == sig;
      if (seen) continue;
      if (pairs.size() == kMaxPairs) return false;
      pairs.push_back({next, began, out.get(), sig});
      owned.push_back(std::move(out));
    }
  }
  return true;
}

// A run of ASCII bytes that step a state alike, and the signature of the state they
// lead to ("" for a state too large to sign).
struct AsciiRun {
  int lo, hi;
  std::string sig;
};

// The runs of ASCII bytes that `set` can scan.
std::vector<AsciiRun> AsciiSteps(EarleyParser& parser, const EarleySet& set) {
  std::vector<AsciiRun> runs;
  std::array<bool, 257> cut = ByteCuts(parser, set);
  thread_local EarleySet out;
  for (int b = 0, end; b < 0x80; b = end) {  // one step per run of bytes that behave alike
    for (end = b + 1; end < 0x80 && !cut[end];) ++end;
    if (!parser.Advance(set, static_cast<uint8_t>(b), &out)) continue;
    runs.push_back({b, end - 1, {}});
    if (!ParseSignature(out, kMaxItems, &runs.back().sig)) runs.back().sig.clear();
  }
  return runs;
}

// The ASCII bytes among `runs` that lead to `sig`.
SliceClass BytesTo(const std::vector<AsciiRun>& runs, const std::string& sig) {
  SliceClass cls;
  for (const AsciiRun& run : runs) {
    if (sig.empty() || run.sig != sig) continue;
    for (int b = run.lo; b <= run.hi; ++b) cls.AddAscii(static_cast<uint8_t>(b));
  }
  return cls;
}

// Below this many ASCII bytes (JSON string content has 94), or without non-ASCII
// characters, a class's rest trie is most of the vocabulary's: building it costs more
// than the walks it spares (C's header names, [A-Za-z0-9_./]: 31M instructions), unless
// prebuilt (identifiers).
constexpr int kMinBuiltAscii = 90;

// The pool's slice of `cls`, built on first use when dense; null when not worth it.
std::shared_ptr<const TokenSlice> SliceFor(const TokenizerInfo& tok, const SliceClass& cls, NodeMaskPool& pool) {
  std::string key = cls.Key();
  if (auto found = pool.FindSlice(key)) return found;
  if (!cls.utf8 || cls.NumAscii() < kMinBuiltAscii) return nullptr;
  return pool.InsertSlice(key, std::make_shared<const TokenSlice>(BuildTokenSlice(tok, cls)));
}

}  // namespace

SliceUse LoopingSlice(EarleyParser& parser, const TokenizerInfo& tok, const EarleySet& start, NodeMaskPool& pool) {
  parser.ReadAllByteEdges(start);  // the count below reads every item's first bytes
  int scannable = __builtin_popcountll(start.next_bytes[0]) + __builtin_popcountll(start.next_bytes[1]);
  if (scannable < kMinSliceAscii) return {};
  std::string start_sig;
  if (!ParseSignature(start, kMaxItems, &start_sig)) return {};
  std::vector<AsciiRun> steps = AsciiSteps(parser, start);
  // The class: the bytes that lead back to `start` (inside a string, free text). Or
  // else the class that the state most bytes lead to loops on, its tokens accepted
  // from `start` when their first byte leads there (free text after a partial trigger
  // such as "<functio": its slice is the free text's, less the tokens starting "n").
  SliceClass first = BytesTo(steps, start_sig);
  SliceClass loop = first;
  if (first.NumAscii() < kMinSliceAscii) {
    // The signature the most bytes lead to (a few runs: counted pairwise).
    const std::string* common = nullptr;
    int most = 0;
    for (const AsciiRun& run : steps) {
      if (run.sig.empty()) continue;
      int bytes = 0;
      for (const AsciiRun& other : steps) bytes += other.sig == run.sig ? other.hi - other.lo + 1 : 0;
      if (bytes > most) most = bytes, common = &run.sig;
    }
    if (most < kMinSliceAscii) return {};
    first = BytesTo(steps, *common);
    EarleySet there;
    uint8_t b = 0;
    while (!first.HasAscii(b)) ++b;
    parser.Advance(start, b, &there);
    loop = BytesTo(AsciiSteps(parser, there), *common);
    for (int w = 0; w < 2; ++w) first.ascii[w] &= loop.ascii[w];
    if (first.NumAscii() < kMinSliceAscii) return {};
  }
  for (bool utf8 : {true, false}) {
    loop.utf8 = first.utf8 = utf8;
    if (!Loops(parser, start, start_sig, first, loop)) continue;
    SliceUse use;
    use.slice = SliceFor(tok, loop, pool);
    if (!use.slice) continue;  // not kept, and too sparse to build: the ASCII class may be kept
    for (int w = 0; w < 2; ++w) use.excluded_first[w] = loop.ascii[w] & ~first.ascii[w];
    return use;
  }
  return {};
}

void PrebuildSlices(const TokenizerInfo& tok, NodeMaskPool& pool) {
  // Every character but `excluded` (ASCII), non-ASCII ones included.
  auto all_but = [](const std::string& excluded) {
    SliceClass cls;
    cls.utf8 = true;
    for (uint8_t b = 0; b < 0x80; ++b) {
      if (excluded.find(static_cast<char>(b)) == std::string::npos) cls.AddAscii(b);
    }
    return cls;
  };
  SliceClass json_string = all_but("\"\\");  // and no control character
  json_string.ascii[0] &= ~uint64_t{0xFFFFFFFF};
  SliceClass identifier;
  for (uint8_t b = 0; b < 0x80; ++b) {
    if (std::isalnum(b) || b == '_') identifier.AddAscii(b);
  }
  std::vector<SliceClass> classes{json_string, identifier};
  // Free text up to a tag, then the contents code grammars loop on: strings spanning
  // lines (Python's triple quotes) or not (C, Python, JavaScript), in either quote,
  // SQL's strings (no escapes), line comments and C's block comments. A slice first
  // met in the middle of a generation costs a pass over the trie there (about 3 ms
  // with Llama-3's vocabulary); here they share one.
  for (const char* excluded : {"<", "\"\\", "\n\"\\", "'\\", "\n'\\", "'", "\n", "*"}) {
    classes.push_back(all_but(excluded));
  }
  std::vector<TokenSlice> slices = BuildTokenSlices(tok, classes);
  for (TokenSlice& slice : slices) {
    std::string key = slice.cls.Key();
    pool.InsertSlice(key, std::make_shared<const TokenSlice>(std::move(slice)));
  }
}

}  // namespace xgr2
