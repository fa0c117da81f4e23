#include <algorithm>
#include <cstring>

#include "engine/compiled_grammar_impl.h"
#include "xgr2/errors.h"
#include "xgr2/matcher.h"

namespace xgr2 {

MatcherState::MatcherState(const CompiledGrammar& compiled)
    : grammar_(compiled.impl()), set_(compiled.impl()->initial) {}

int32_t MatcherState::VocabSize() const { return grammar_->tokenizer->vocab_size(); }

bool MatcherState::CanTerminate() const { return !terminated_ && set_->accepting; }

std::optional<MatcherState> MatcherState::TryAdvanceBytes(const std::string& bytes) const {
  if (terminated_) return std::nullopt;
  EarleyParser parser(grammar_->fsm(), ThreadScratch());
  std::shared_ptr<const EarleySet> cur = set_;
  for (char c : bytes) {
    auto next = std::make_shared<EarleySet>();
    next->parent = cur.get();
    next->parent_owner = cur;
    if (!parser.Advance(*cur, static_cast<uint8_t>(c), next.get())) return std::nullopt;
    cur = std::move(next);
  }
  MatcherState out = *this;
  out.set_ = std::move(cur);
  out.num_bytes_ += static_cast<int64_t>(bytes.size());
  return out;
}

std::optional<MatcherState> MatcherState::TryAdvance(int32_t token) const {
  const TokenizerInfo& tok = *grammar_->tokenizer;
  if (token < 0 || token >= tok.vocab_size()) {
    throw InvalidTokenError("token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                            std::to_string(tok.vocab_size()) + ")");
  }
  if (terminated_) return std::nullopt;
  std::optional<MatcherState> out;
  if (tok.is_stop(token)) {
    if (!set_->accepting) return std::nullopt;
    out = *this;
    out->terminated_ = true;
  } else {
    if (!tok.is_text(token)) return std::nullopt;
    out = TryAdvanceBytes(tok.decoded(token));
    if (!out) return std::nullopt;
  }
  out->num_tokens_ += 1;
  return out;
}

bool MatcherState::Accepts(int32_t token) const { return TryAdvance(token).has_value(); }

namespace {

// Scratch sets for the trie walk, one per depth, reused across calls on a thread.
std::vector<std::unique_ptr<EarleySet>>& WalkStack(size_t depth) {
  thread_local std::vector<std::unique_ptr<EarleySet>> stack;
  while (stack.size() < depth) stack.push_back(std::make_unique<EarleySet>());
  return stack;
}

}  // namespace

void MatcherState::FillBitmask(uint32_t* words) const {
  const TokenizerInfo& tok = *grammar_->tokenizer;
  size_t num_words = (static_cast<size_t>(tok.vocab_size()) + 31) / 32;
  std::memset(words, 0, num_words * sizeof(uint32_t));
  if (terminated_) return;
  auto allow = [&](int32_t id) { words[id >> 5] |= uint32_t{1} << (id & 31); };
  if (set_->accepting) {
    for (int32_t id : tok.stop_ids()) allow(id);
  }

  // Walk the sorted vocabulary as a trie: consecutive tokens share their common
  // prefix's parser sets; a rejected prefix skips every token that extends it.
  EarleyParser parser(grammar_->fsm(), ThreadScratch());
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  auto& stack = WalkStack(static_cast<size_t>(tok.max_token_bytes()) + 1);
  std::vector<const EarleySet*> path(static_cast<size_t>(tok.max_token_bytes()) + 1);
  path[0] = set_.get();
  const std::string* prev = nullptr;  // token whose bytes path[1..depth] spells
  size_t depth = 0;
  size_t n = sorted.size();
  for (size_t i = 0; i < n;) {
    const std::string& s = tok.decoded(sorted[i]);
    if (prev) {
      size_t lcp = 0, limit = std::min(depth, s.size());
      while (lcp < limit && (*prev)[lcp] == s[lcp]) ++lcp;
      depth = lcp;
    }
    prev = &s;
    bool ok = true;
    while (depth < s.size()) {
      uint8_t b = static_cast<uint8_t>(s[depth]);
      EarleySet* next = stack[depth + 1].get();
      next->parent = path[depth];
      if (!parser.Advance(*path[depth], b, next)) {
        ok = false;
        break;
      }
      path[++depth] = next;
    }
    if (ok) {
      allow(sorted[i]);
      ++i;
      continue;
    }
    // Every later token starting with s[0..depth] is rejected too.
    size_t plen = depth + 1;
    auto first_after = std::partition_point(sorted.begin() + i + 1, sorted.end(), [&](int32_t id) {
      const std::string& t = tok.decoded(id);
      return t.size() >= plen && std::memcmp(t.data(), s.data(), plen) == 0;
    });
    i = static_cast<size_t>(first_after - sorted.begin());
  }
}

std::string MatcherState::JumpForwardBytes(int32_t max_bytes) const {
  std::string out;
  if (terminated_) return out;
  EarleyParser parser(grammar_->fsm(), ThreadScratch());
  // Keep the chain alive: scratch sets point at their parents as origins.
  std::vector<std::unique_ptr<EarleySet>> chain;
  const EarleySet* cur = set_.get();
  while (static_cast<int32_t>(out.size()) < max_bytes && !cur->accepting) {
    int only = -1, count = 0;
    for (int w = 0; w < 4 && count < 2; ++w) {
      uint64_t bits = cur->next_bytes[w];
      while (bits && count < 2) {
        only = w * 64 + __builtin_ctzll(bits);
        bits &= bits - 1;
        ++count;
      }
    }
    if (count != 1) break;
    auto next = std::make_unique<EarleySet>();
    next->parent = cur;
    if (!parser.Advance(*cur, static_cast<uint8_t>(only), next.get())) break;
    out.push_back(static_cast<char>(only));
    cur = next.get();
    chain.push_back(std::move(next));
  }
  return out;
}

}  // namespace xgr2
