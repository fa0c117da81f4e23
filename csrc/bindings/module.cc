// nanobind glue: thin handles over the engine. Heavy calls release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "engine/batch.h"
#include "engine/grammar_sources.h"
#include "engine/mask_pool_registry.h"
#include "engine/node_mask_pool.h"
#include "frontends/json_formats.h"
#include "frontends/schema_cache.h"
#include "grammar/determinize.h"
#include "support/thread_pool.h"
#include "support/utf8.h"
#include "xgr2/errors.h"
#include "xgr2/grammar.h"
#include "xgr2/matcher.h"
#include "xgr2/tokenizer.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace xgr2;

namespace xgr2 {
void BindTreeMasks(nb::module_& m);  // csrc/bindings/tree_masks.cc
void BindXlaFfi(nb::module_& m);     // csrc/bindings/xla_ffi.cc
void BindJsonText(nb::module_& m);   // csrc/bindings/json_text.cc
}

namespace {

// Python exception classes from xgr2/_errors.py, registered at import.
PyObject* g_grammar_error = PyExc_ValueError;
PyObject* g_tokenizer_error = PyExc_ValueError;
PyObject* g_invalid_token_error = PyExc_ValueError;
PyObject* g_token_rejected_error = PyExc_ValueError;
PyObject* g_regex_error = PyExc_ValueError;
PyObject* g_schema_error = PyExc_ValueError;
PyObject* g_structural_tag_error = PyExc_ValueError;

void SetErrorTypes(nb::handle grammar, nb::handle tokenizer, nb::handle invalid_token, nb::handle rejected,
                   nb::handle regex, nb::handle schema, nb::handle structural_tag) {
  g_structural_tag_error = structural_tag.inc_ref().ptr();
  g_regex_error = regex.inc_ref().ptr();
  g_schema_error = schema.inc_ref().ptr();
  g_grammar_error = grammar.inc_ref().ptr();  // kept for the life of the process
  g_tokenizer_error = tokenizer.inc_ref().ptr();
  g_invalid_token_error = invalid_token.inc_ref().ptr();
  g_token_rejected_error = rejected.inc_ref().ptr();
}

// A Python str of an error text; bytes of user input that are not UTF-8 become U+FFFD
// (nb::str would throw, turning a clear error into a RuntimeError).
nb::str Text(const std::string& s) {
  return nb::steal<nb::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

// Raises `type(*args)`: the library's error classes take the message and a location.
template <typename... Args>
void Raise(PyObject* type, const Args&... args) {
  try {
    PyErr_SetObject(type, nb::handle(type)(args...).ptr());
  } catch (nb::python_error& e) {  // the constructor itself failed: report that
    e.restore();
  }
}

void TranslateErrors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const GrammarError& e) {
    Raise(g_grammar_error, Text(e.what()), e.line, e.column);
  } catch (const RegexError& e) {
    Raise(g_regex_error, Text(e.what()), e.position);
  } catch (const SchemaError& e) {
    Raise(g_schema_error, Text(e.what()), Text(e.pointer));
  } catch (const StructuralTagError& e) {
    Raise(g_structural_tag_error, Text(e.what()), Text(e.path));
  } catch (const TokenizerError& e) {
    Raise(g_tokenizer_error, Text(e.what()));
  } catch (const InvalidTokenError& e) {
    Raise(g_invalid_token_error, Text(e.what()));
  } catch (const TokenRejectedError& e) {
    Raise(g_token_rejected_error, Text(e.what()));
  }
}

// A validated int32 bitmask array: [rows, words] (or one row, 1-D), rows C-contiguous.
struct BitmaskView {
  int32_t* data;
  int64_t rows;
  int64_t row_stride;
};

BitmaskView CheckBitmask(nb::handle out, int32_t vocab_size) {
  nb::ndarray<nb::device::cpu> arr;
  if (!nb::try_cast(out, arr)) {
    throw nb::type_error("bitmask must be a writable numpy int32 array on the CPU");
  }
  if (arr.dtype() != nb::dtype<int32_t>()) throw nb::type_error("bitmask must have dtype int32");
  int64_t words = (static_cast<int64_t>(vocab_size) + 31) / 32;
  if (arr.ndim() != 2 && arr.ndim() != 1) {
    throw nb::value_error(("bitmask must be 2-D [batch, " + std::to_string(words) + "], got " +
                           std::to_string(arr.ndim()) + " dimensions").c_str());
  }
  int64_t width = static_cast<int64_t>(arr.shape(arr.ndim() - 1));
  if (width != words) {
    throw nb::value_error(("bitmask rows must have " + std::to_string(words) + " int32 words for vocab_size " +
                           std::to_string(vocab_size) + ", got " + std::to_string(width)).c_str());
  }
  int64_t rows = arr.ndim() == 2 ? static_cast<int64_t>(arr.shape(0)) : 1;
  if (rows > 0 && arr.stride(arr.ndim() - 1) != 1) throw nb::value_error("bitmask rows must be C-contiguous");
  int64_t row_stride = arr.ndim() == 2 ? arr.stride(0) : 0;
  return BitmaskView{static_cast<int32_t*>(arr.data()), rows, row_stride};
}

uint32_t* RowOf(const BitmaskView& view, int64_t row) {
  if (row < 0 || row >= view.rows) {
    throw nb::index_error(("row " + std::to_string(row) + " is outside the bitmask's " + std::to_string(view.rows) +
                           " rows").c_str());
  }
  return reinterpret_cast<uint32_t*>(view.data + row * view.row_stride);
}

uint32_t* BitmaskRow(nb::handle out, int64_t row, int32_t vocab_size) {
  return RowOf(CheckBitmask(out, vocab_size), row);
}

// Token ids arrive as Python ints of any size; anything outside [0, vocab) is invalid.
int32_t CheckedToken(const MatcherState& s, nb::handle obj) {
  if (!PyLong_Check(obj.ptr())) {
    throw nb::type_error(("token_id must be an int, got " + std::string(nb::type_name(obj.type()).c_str())).c_str());
  }
  int overflow = 0;
  long long token = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (overflow) {
    throw InvalidTokenError("token id " + std::string(nb::str(obj).c_str()) + " is outside the vocabulary [0, " +
                            std::to_string(s.VocabSize()) + ")");
  }
  CheckTokenId(token, s.VocabSize());
  return static_cast<int32_t>(token);
}

// UTF-8 of a Python str; lone surrogates are a ValueError, not a crash.
std::string Utf8(nb::handle text, const char* what) {
  if (!PyUnicode_Check(text.ptr())) throw nb::type_error((std::string(what) + " must be str").c_str());
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (!data) {
    PyErr_Clear();
    throw nb::value_error((std::string(what) + " is not valid Unicode (lone surrogate?)").c_str());
  }
  return std::string(data, static_cast<size_t>(size));
}

// Fills rows of one bitmask for many states on the thread pool, the GIL released.
void BatchFillBitmask(const std::vector<MatcherState>& states, nb::handle out, const std::vector<int64_t>& rows,
                      int num_threads) {
  if (states.empty()) return;
  if (rows.size() != states.size()) {
    throw nb::value_error(("got " + std::to_string(states.size()) + " states but " + std::to_string(rows.size()) +
                           " rows").c_str());
  }
  int32_t vocab = states[0].VocabSize();
  BitmaskView view = CheckBitmask(out, vocab);
  std::vector<uint32_t*> targets;
  targets.reserve(states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].VocabSize() != vocab) throw nb::value_error("all states must share one vocabulary size");
    targets.push_back(RowOf(view, rows[i]));
  }
  nb::gil_scoped_release release;
  FillBitmasks(states, targets, num_threads);
}

// Advances many states by one token each; rejected rows give None.
std::vector<std::optional<MatcherState>> BatchAdvance(const std::vector<MatcherState>& states,
                                                      const std::vector<int64_t>& tokens, int num_threads) {
  if (tokens.size() != states.size()) {
    throw nb::value_error(("got " + std::to_string(states.size()) + " states but " +
                           std::to_string(tokens.size()) + " tokens").c_str());
  }
  nb::gil_scoped_release release;
  return AdvanceAll(states, tokens, num_threads);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "xgr2 C++ engine (internal; use the xgr2 package).";
  nb::register_exception_translator(TranslateErrors);
  m.def("_set_error_types", &SetErrorTypes);
  m.def("batch_fill_bitmask", &BatchFillBitmask, "states"_a, nb::arg("out").none(), "rows"_a, "num_threads"_a);
  m.def("batch_advance", &BatchAdvance, "states"_a, "tokens"_a, "num_threads"_a);
  m.def("clear_shared_automata", [] {
    ClearSharedDfas();
    ClearJsonSchemaCache();
  });
  BindTreeMasks(m);
  BindXlaFfi(m);
  BindJsonText(m);
  m.def("json_format_ebnf", [](const std::string& format) -> std::optional<std::string> {
    const char* text = JsonFormatEbnf(format);
    if (!text) return std::nullopt;
    return std::string(text);
  });

  nb::class_<ParsedGrammar>(m, "GrammarIR")
      .def_static(
          "from_ebnf",
          [](nb::handle text_obj, nb::handle root_obj) {
            std::string text = Utf8(text_obj, "grammar text"), root = Utf8(root_obj, "root");
            nb::gil_scoped_release release;
            return GrammarFromEbnf(text, root);
          },
          "text"_a, "root"_a)
      .def_static(
          "from_regex",
          [](nb::handle pattern_obj, bool search) {
            std::string pattern = Utf8(pattern_obj, "pattern");
            nb::gil_scoped_release release;
            return GrammarFromRegex(pattern, search);
          },
          "pattern"_a, "search"_a = false)
      .def_static(
          "_numeric_range",  // tests only: the number front end alone
          [](bool integer, const std::string& minimum, const std::string& maximum, bool exclusive_minimum,
             bool exclusive_maximum, const std::string& multiple_of) -> std::optional<ParsedGrammar> {
            NumericConstraints c{minimum, maximum, multiple_of, exclusive_minimum, exclusive_maximum};
            return GrammarFromNumericRange(integer, c);
          },
          "integer"_a, "minimum"_a, "maximum"_a, "exclusive_minimum"_a, "exclusive_maximum"_a, "multiple_of"_a)
      .def_static(
          "_regex_set",  // tests only: the regular-language operations alone (grammar_sources.h)
          [](const std::string& a, const std::string& b, const std::string& op, int64_t min_len, int64_t max_len) {
            nb::gil_scoped_release release;
            return GrammarFromRegexSet(a, b, op, min_len, max_len);
          },
          "a"_a, "b"_a, "op"_a, "min_len"_a, "max_len"_a)
      .def_static(
          "_regex_set_accepts",
          [](const std::string& a, const std::string& b, const std::string& op, int64_t min_len, int64_t max_len,
             const std::vector<std::string>& texts) {
            nb::gil_scoped_release release;
            return RegexSetAccepts(a, b, op, min_len, max_len, texts);
          },
          "a"_a, "b"_a, "op"_a, "min_len"_a, "max_len"_a, "texts"_a)
      .def_static(
          "from_json_schema",
          [](nb::handle schema_obj, bool any_whitespace, int indent, std::optional<std::pair<std::string, std::string>> separators,
             bool strict, int unsupported, std::vector<std::pair<std::string, std::string>> resources, bool any_order) {
            std::string schema = Utf8(schema_obj, "schema");
            JsonSchemaOptions opt;
            opt.resources = std::move(resources);
            opt.any_whitespace = any_whitespace;
            opt.indent = indent;
            if (separators) {
              opt.has_separators = true;
              opt.item_separator = separators->first;
              opt.key_separator = separators->second;
            }
            opt.strict = strict;
            opt.any_order = any_order;
            opt.unsupported = static_cast<UnsupportedPolicy>(unsupported);
            nb::gil_scoped_release release;
            return GrammarFromJsonSchema(schema, opt);
          },
          "schema"_a, "any_whitespace"_a, "indent"_a, "separators"_a.none(), "strict"_a, "unsupported"_a,
          "resources"_a = std::vector<std::pair<std::string, std::string>>(), "any_order"_a = false)
      .def_static(
          "from_structural_tag",
          [](nb::handle spec_obj, const TokenizerInfo* tokenizer) {
            std::string spec = Utf8(spec_obj, "structural tag");
            nb::gil_scoped_release release;
            return GrammarFromStructuralTag(spec, tokenizer);
          },
          "spec"_a, "tokenizer"_a.none())
      .def_static("builtin_json_ebnf", []() { return BuiltinJsonEbnf(); })
      .def("to_ebnf", [](const ParsedGrammar& h) { return PrintGrammar(*h.ir); })
      .def_prop_ro("root_name", [](const ParsedGrammar& h) { return h.ir->rules[h.ir->root].name; })
      .def_prop_ro("rule_names", [](const ParsedGrammar& h) {
        std::vector<std::string> names;
        for (const Rule& r : h.ir->rules) names.push_back(r.name);
        return names;
      });

  nb::class_<NodeMaskPool>(m, "MaskPool")
      .def("stats",
           [](const NodeMaskPool& p) {
             NodeMaskPool::Stats s = p.GetStats();
             return std::make_tuple(s.hits, s.misses, s.entries, s.bytes, s.limit_bytes, s.evictions);
           })
      .def("clear", &NodeMaskPool::Clear)
      .def("set_limit", &NodeMaskPool::SetLimitBytes);
  m.def("mask_pool_for", &MaskPoolFor, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<TokenizerInfo>(m, "TokenizerInfoCore")
      .def(
          "__init__",
          [](TokenizerInfo* self, const std::vector<nb::bytes>& encoded, int vocab_type, int32_t vocab_size,
             std::vector<int32_t> stop_ids, std::vector<int32_t> special_ids) {
            std::vector<std::string> tokens;
            tokens.reserve(encoded.size());
            for (const nb::bytes& b : encoded) tokens.emplace_back(b.c_str(), b.size());
            if (vocab_type < 0 || vocab_type > 2) throw TokenizerError("unknown vocab type");
            nb::gil_scoped_release release;
            new (self) TokenizerInfo(tokens, static_cast<VocabType>(vocab_type), vocab_size, std::move(stop_ids),
                                     std::move(special_ids));
          },
          "encoded"_a, "vocab_type"_a, "vocab_size"_a, "stop_ids"_a, "special_ids"_a)
      .def_prop_ro("vocab_size", &TokenizerInfo::vocab_size)
      .def_prop_ro("tokenizer_size", &TokenizerInfo::tokenizer_size)
      .def_prop_ro("vocab_type", [](const TokenizerInfo& t) { return static_cast<int>(t.vocab_type()); })
      .def_prop_ro("stop_ids", &TokenizerInfo::stop_ids)
      .def_prop_ro("special_ids", &TokenizerInfo::special_ids)
      .def("decoded_vocab", [](const TokenizerInfo& t) {
        std::vector<nb::bytes> out;
        out.reserve(static_cast<size_t>(t.tokenizer_size()));
        for (int32_t i = 0; i < t.tokenizer_size(); ++i) {
          const std::string& s = t.decoded(i);
          out.emplace_back(s.data(), s.size());
        }
        return out;
      });

  nb::class_<CompiledGrammar>(m, "CompiledGrammarCore")
      .def(
          "__init__",
          [](CompiledGrammar* self, const ParsedGrammar& g, std::shared_ptr<TokenizerInfo> tok, bool mask_cache,
             bool precompute_all, int64_t precompute_costliest, bool direct_cold_walks) {
            nb::gil_scoped_release release;
            new (self) CompiledGrammar(
                g.ir, g.fsm, std::move(tok),
                CompileOptions{mask_cache, precompute_all, precompute_costliest, direct_cold_walks});
          },
          "grammar"_a, "tokenizer"_a, "mask_cache"_a = true, "precompute_all"_a = false,
          "precompute_costliest"_a = 0, "direct_cold_walks"_a = true)
      .def_prop_ro("num_cached_node_masks", &CompiledGrammar::NumCachedNodeMasks)
      .def_prop_ro("num_automaton_nodes", &CompiledGrammar::NumAutomatonNodes)
      .def("_make_lookup_keys", &CompiledGrammar::MakeLookupKeys, "radius"_a, "repeats"_a,
           nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("cache_memory_bytes", &CompiledGrammar::CacheMemoryBytes)
      .def_prop_ro("memory_bytes", &CompiledGrammar::MemoryBytes)
      .def("precompute_all", &CompiledGrammar::PrecomputeAll, "num_threads"_a = 0,
           nb::call_guard<nb::gil_scoped_release>())
      .def("precompute_costliest", &CompiledGrammar::PrecomputeCostliest, "count"_a, "num_threads"_a = 0,
           nb::call_guard<nb::gil_scoped_release>())
      .def("precompute_in_background", &CompiledGrammar::PrecomputeInBackground, "count"_a, "num_threads"_a = 0,
           nb::call_guard<nb::gil_scoped_release>())
      .def("initial_state", [](const CompiledGrammar& c) { return MatcherState(c); });

  nb::class_<BackgroundJob>(m, "BackgroundJob", "A job on the engine's shared thread pool; see xgr2.PrecomputeJob.")
      .def("cancel", &BackgroundJob::Cancel)
      .def("done", &BackgroundJob::Done)
      .def(
          "wait",
          [](const BackgroundJob& job, std::optional<double> timeout) {
            nb::gil_scoped_release release;
            return job.Wait(timeout ? std::max(0.0, *timeout) : -1.0);
          },
          nb::arg("timeout").none() = nb::none())
      .def_prop_ro("pieces_done", &BackgroundJob::PiecesDone)
      .def_prop_ro("num_pieces", &BackgroundJob::NumPieces);

  nb::class_<MatcherState>(m, "MatcherState",
                           "An immutable point of a constrained decoding; see xgr2.MatcherState docs.")
      .def(
          "try_advance", [](const MatcherState& s, nb::handle t) {
            int32_t id = CheckedToken(s, t);
            nb::gil_scoped_release release;
            return s.TryAdvance(id);
          },
          "token_id"_a, "The state after `token_id`, or None if the grammar rejects it. Raises InvalidTokenError for ids outside [0, vocab_size).")
      .def(
          "advance",
          [](const MatcherState& s, nb::handle token_obj) {
            int32_t token = CheckedToken(s, token_obj);
            nb::gil_scoped_release release;
            auto out = s.TryAdvance(token);
            if (!out) {
              throw TokenRejectedError("token " + std::to_string(token) + " is not allowed here" +
                                       (s.IsTerminated() ? " (the state is terminated)" : ""));
            }
            return *out;
          },
          "token_id"_a, R"doc(The state after `token_id`.

Raises TokenRejectedError if the grammar rejects it (this state stays valid)
and InvalidTokenError for ids outside [0, vocab_size).)doc")
      .def(
          "advance_bytes",
          [](const MatcherState& s, nb::bytes data) {
            std::string bytes(data.c_str(), data.size());
            nb::gil_scoped_release release;
            auto out = s.TryAdvanceBytes(bytes);
            if (!out) throw TokenRejectedError("the grammar does not allow these bytes here");
            return *out;
          },
          "data"_a, R"doc(The state after forced bytes; raises TokenRejectedError if they are not allowed.)doc")
      .def(
          "try_advance_bytes",
          [](const MatcherState& s, nb::bytes data) {
            std::string bytes(data.c_str(), data.size());
            nb::gil_scoped_release release;
            return s.TryAdvanceBytes(bytes);
          },
          "data"_a, R"doc(The state after forced bytes, or None if they are not allowed.)doc")
      .def(
          "accepts", [](const MatcherState& s, nb::handle t) {
            int32_t id = CheckedToken(s, t);
            nb::gil_scoped_release release;
            return s.Accepts(id);
          }, "token_id"_a, "Whether `token_id` is allowed here.")
      .def(
          "fill_bitmask",
          [](const MatcherState& s, nb::handle out, int64_t row) {
            uint32_t* words = BitmaskRow(out, row, s.VocabSize());
            nb::gil_scoped_release release;
            s.FillBitmask(words);
          },
          nb::arg("out").none(), "row"_a = 0, R"doc(Writes this state's allowed tokens into row `row` of `out`.

`out` is a writable C-contiguous numpy int32 array [B, ceil(vocab_size/32)]; token t
is bit t % 32 of word t // 32, 1 = allowed. Releases the GIL.)doc")
      .def(
          "jump_forward_bytes",
          [](const MatcherState& s) {
            std::string b;
            {
              nb::gil_scoped_release release;
              b = s.JumpForwardBytes();
            }
            return nb::bytes(b.data(), b.size());
          }, R"doc(The longest byte string every continuation starts with; the state is unchanged.)doc")
      .def(
          "_jump_forward_past_whitespace",
          [](const MatcherState& s) {
            std::string b;
            std::vector<int32_t> gaps;
            {
              nb::gil_scoped_release release;
              b = s.JumpForwardBytes(1 << 16, &gaps);
            }
            return std::make_pair(nb::bytes(b.data(), b.size()), gaps);
          },
          R"doc((bytes, gaps): jump_forward_bytes() where optional whitespace is the only other choice, and
the byte offsets where whitespace could go (for drafters that add the model's own).)doc")
      .def(
          "advance_text",
          [](const MatcherState& s, nb::handle obj) {
            std::string text = Utf8(obj, "text");
            nb::gil_scoped_release release;
            auto out = s.TryAdvanceBytes(text);
            if (!out) throw TokenRejectedError("the grammar does not allow this text here");
            return *out;
          },
          "text"_a, R"doc(The state after forced UTF-8 text; raises TokenRejectedError if it is not allowed.)doc")
      .def("jump_forward_text",
           [](const MatcherState& s) {
             std::string b;
             {
               nb::gil_scoped_release release;
               b = s.JumpForwardBytes();
             }
             // Inside a character the forced bytes start mid-character: no whole text.
             if (!b.empty() && (static_cast<uint8_t>(b[0]) & 0xC0) == 0x80) return nb::str("");
             return nb::str(b.data(), CompleteUtf8Prefix(b));
           }, R"doc(jump_forward_bytes() cut to whole UTF-8 characters, as str; "" when the state is inside a
character, so its bytes are always a prefix of jump_forward_bytes().)doc")
      .def("bitmask",
           [](const MatcherState& s) {
             size_t words = (static_cast<size_t>(s.VocabSize()) + 31) / 32;
             auto* data = new int32_t[words];
             nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<int32_t*>(p); });
             {
               nb::gil_scoped_release release;
               s.FillBitmask(reinterpret_cast<uint32_t*>(data));
             }
             return nb::ndarray<nb::numpy, int32_t, nb::ndim<1>>(data, {words}, owner);
           }, R"doc(A new int32 row of ceil(vocab_size/32) words with this state's allowed tokens.)doc")
      .def("__reduce__",
           [](const MatcherState&) -> nb::object {
             throw nb::type_error(
                 "MatcherState is not picklable: keep the token ids and replay them on "
                 "compiled.initial_state() in the other process");
           },
           nb::sig("def __reduce__(self) -> tuple[object, ...]"))
      .def("__repr__",
           [](const MatcherState& s) {
             return "MatcherState(num_tokens=" + std::to_string(s.NumTokens()) +
                    ", can_terminate=" + (s.CanTerminate() ? "True" : "False") +
                    ", is_terminated=" + (s.IsTerminated() ? "True" : "False") + ")";
           })
      .def_prop_ro("is_terminated", &MatcherState::IsTerminated)
      .def_prop_ro("can_terminate", &MatcherState::CanTerminate)
      .def_prop_ro("num_tokens", &MatcherState::NumTokens)
      .def_prop_ro("num_bytes", &MatcherState::NumBytes)
      .def_prop_ro("memory_bytes", &MatcherState::MemoryBytes,
                   R"doc(Bytes of parser state this snapshot keeps alive.

The Earley sets a parse from this state can still reach: one per open rule call (so it
grows with nesting depth, not with the number of tokens) plus the current one. Sets
shared with other snapshots (forks of one state, older states of the same generation)
are counted in full by each of them, so the sum over snapshots overcounts; the compiled
grammar's initial set is counted too. Allocator overhead is not.)doc")
      .def_prop_ro("vocab_size", [](const MatcherState& s) { return s.VocabSize(); })
      .def("__len__", &MatcherState::NumTokens);
}
