// Exceptions thrown by the engine. The bindings translate each into the Python
// exception of the same name (xgr2/_errors.py).
#pragma once
#include <cstdint>
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

// A grammar whose root derives no finite string (front ends turn it into their own error).
class EmptyLanguageError : public GrammarError {
 public:
  using GrammarError::GrammarError;
};

// A malformed regular expression. `position` is the 0-based offset in the pattern
// (in code points) where the problem starts.
class RegexError : public std::runtime_error {
 public:
  RegexError(const std::string& msg, int position) : std::runtime_error(msg), position(position) {}
  int position;
};

// A JSON Schema the front end cannot compile exactly (malformed, or a keyword it does
// not support). `pointer` is the JSON pointer (RFC 6901) of the offending keyword.
class SchemaError : public std::runtime_error {
 public:
  // `hint`: advice appended to what() (how to widen instead), which a caller that cannot
  // follow it (a structural tag has no `unsupported` option) leaves out: `message`.
  SchemaError(const std::string& msg, std::string pointer, const std::string& hint = "")
      : std::runtime_error(msg + hint), pointer(std::move(pointer)), message(msg) {}
  std::string pointer;
  std::string message;  // what() without the hint
};

// A malformed or unsupported structural tag. `path` is the JSON pointer (RFC 6901) of
// the offending field in the spec ("" for the spec itself).
class StructuralTagError : public std::runtime_error {
 public:
  StructuralTagError(const std::string& msg, std::string path) : std::runtime_error(msg), path(std::move(path)) {}
  std::string path;
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

// Throws InvalidTokenError unless 0 <= token < vocab_size; `where` starts the message
// (e.g. "row 3: ").
inline void CheckTokenId(int64_t token, int64_t vocab_size, const std::string& where = "") {
  if (token < 0 || token >= vocab_size) {
    throw InvalidTokenError(where + "token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                            std::to_string(vocab_size) + ")");
  }
}

// A token or text the grammar does not allow at this state.
class TokenRejectedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace xgr2
