// Exceptions thrown by the engine. The bindings translate each into the Python
// exception of the same name (xgr2/_errors.py).
#pragma once
#include <stdexcept>
#include <string>

namespace xgr2 {

// Malformed grammar text or IR. line/column are 1-based; 0 when unknown.
class GrammarError : public std::runtime_error {
 public:
  GrammarError(const std::string& msg, int line = 0, int column = 0)
      : std::runtime_error(msg), line(line), column(column) {}
  int line;
  int column;
};

// Inconsistent tokenizer description (sizes, ids, encodings).
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A token id outside [0, vocab_size).
class InvalidTokenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A token or text the grammar does not allow at this state.
class TokenRejectedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace xgr2
