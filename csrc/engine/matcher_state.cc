#include <algorithm>
#include <cstring>

#include "engine/compiled_grammar_impl.h"
#include "engine/token_ids.h"
#include "engine/token_walk.h"
#include "grammar/token_spelling.h"
#include "xgr2/errors.h"
#include "xgr2/matcher.h"

namespace xgr2 {

MatcherState::MatcherState(const CompiledGrammar& compiled)
    : grammar_(compiled.impl()), set_(compiled.impl()->initial) {}

int32_t MatcherState::VocabSize() const { return grammar_->tokenizer->vocab_size(); }

bool MatcherState::CanTerminate() const { return !terminated_ && set_->accepting; }

namespace {

// The persistent set after scanning `bytes` from `start`, or null when they are rejected.
std::shared_ptr<const EarleySet> Scan(const GrammarFsm& fsm, std::shared_ptr<const EarleySet> cur,
                                      const std::string& bytes) {
  EarleyParser parser(fsm, ThreadScratch());
  for (char c : bytes) {
    auto next = std::make_shared<EarleySet>();
    if (!parser.Advance(*cur, static_cast<uint8_t>(c), next.get())) return nullptr;
    KeepOrigins(next.get());  // not the whole history: `cur` dies unless an origin
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

std::optional<MatcherState> MatcherState::TryAdvanceBytes(const std::string& bytes) const {
  // Grammar text is UTF-8, which never holds the byte that spells a token id.
  if (terminated_ || bytes.find(static_cast<char>(kTokenMarker)) != std::string::npos) return std::nullopt;
  std::shared_ptr<const EarleySet> next = Scan(grammar_->fsm(), set_, bytes);
  if (!next) return std::nullopt;
  MatcherState out = *this;
  out.set_ = std::move(next);
  out.num_bytes_ += static_cast<int64_t>(bytes.size());
  return out;
}

std::optional<MatcherState> MatcherState::TryAdvance(int32_t token) const {
  const TokenizerInfo& tok = *grammar_->tokenizer;
  CheckTokenId(token, tok.vocab_size());
  if (terminated_) return std::nullopt;
  MatcherState out = *this;
  out.num_tokens_ += 1;
  if (tok.is_stop(token)) {
    if (!set_->accepting) return std::nullopt;
    out.terminated_ = true;
    return out;
  }
  // A token continues the parse as its text, or by its id where the grammar names
  // tokens (ExprKind::kToken); when both do, the state holds both parses.
  std::shared_ptr<const EarleySet> as_text, as_id;
  if (tok.is_text(token)) as_text = Scan(grammar_->fsm(), set_, tok.decoded(token));
  if (set_->CanScan(kTokenMarker) && token < tok.tokenizer_size()) {
    as_id = Scan(grammar_->fsm(), set_, TokenSpelling(token));
  }
  if (!as_text && !as_id) return std::nullopt;
  if (as_text) out.num_bytes_ += static_cast<int64_t>(tok.decoded(token).size());
  out.set_ = as_text && as_id ? UnionOfSets(*as_text, *as_id) : as_text ? std::move(as_text) : std::move(as_id);
  return out;
}

int64_t MatcherState::MemoryBytes() const { return ReachableSetBytes(*set_); }

bool MatcherState::Accepts(int32_t token) const { return TryAdvance(token).has_value(); }

void MatcherState::FillBitmask(uint32_t* words) const {
  const TokenizerInfo& tok = *grammar_->tokenizer;
  size_t num_words = (static_cast<size_t>(tok.vocab_size()) + 31) / 32;
  if (terminated_) {
    std::memset(words, 0, num_words * sizeof(uint32_t));
    return;
  }
  if (grammar_->mask_cache) {
    grammar_->mask_cache->FillBitmask(*set_, words);  // writes the whole row
  } else {
    std::memset(words, 0, num_words * sizeof(uint32_t));
    WalkAcceptedTokens(grammar_->fsm(), tok, *set_, nullptr, 0, words);
  }
  if (set_->accepting) {
    for (int32_t id : tok.stop_ids()) words[id >> 5] |= uint32_t{1} << (id & 31);
  }
  AddTokensById(grammar_->fsm(), tok, *set_, words);
}

std::string MatcherState::JumpForwardBytes(int32_t max_bytes, std::vector<int32_t>* whitespace_gaps) const {
  std::string out;
  if (terminated_) return out;
  EarleyParser parser(grammar_->fsm(), ThreadScratch());
  // Keep the chain alive: its sets' items may have earlier chain sets as origins.
  std::vector<std::unique_ptr<EarleySet>> chain;
  const EarleySet* cur = set_.get();
  while (static_cast<int32_t>(out.size()) < max_bytes && !cur->accepting) {
    int only = -1, count = 0, other = -1, others = 0;  // others: the bytes but whitespace
    for (int w = 0; w < 4 && others < 2; ++w) {
      for (uint64_t bits = cur->next_bytes[w]; bits && others < 2; bits &= bits - 1) {
        const int b = w * 64 + __builtin_ctzll(bits);
        only = b, ++count;
        if (!IsWhitespaceByte(b)) other = b, ++others;
      }
    }
    if (whitespace_gaps && count > 1 && others == 1) {  // optional whitespace, then one byte
      whitespace_gaps->push_back(static_cast<int32_t>(out.size()));
      only = other, count = 1;
    }
    if (count != 1 || only == kTokenMarker) break;  // a token named by id is no text
    auto next = std::make_unique<EarleySet>();
    if (!parser.Advance(*cur, static_cast<uint8_t>(only), next.get())) break;
    out.push_back(static_cast<char>(only));
    cur = next.get();
    chain.push_back(std::move(next));
  }
  return out;
}

}  // namespace xgr2
