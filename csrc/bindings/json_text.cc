// Python values (dicts, lists, strings, numbers) written as JSON text in C++: schemas
// and tool lists come as dicts, and json.dumps of a large schema cost more than compiling
// it (renovate's configuration schema: 141M instructions in the C encoder, against 56M
// for our reader of the same text; callgrind).
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "support/json.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace xgr2 {
namespace {

// Deeper than this is left to json.dumps: a bound on C++ frames.
constexpr int kMaxDepth = 512;

class PyJsonWriter {
 public:
  // False: a value this writer leaves to json.dumps (another type, a key that is not a
  // string, NaN or infinity, a string with a lone surrogate, a cycle, nesting past
  // kMaxDepth), so
  // that every message and conversion stays json.dumps's own.
  bool Write(PyObject* v, int depth) {
    if (depth > kMaxDepth) return false;
    if (v == Py_None) return Put("null");
    if (v == Py_True) return Put("true");
    if (v == Py_False) return Put("false");
    if (PyUnicode_CheckExact(v)) return String(v);
    if (PyLong_CheckExact(v)) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      if (!overflow) return Put(std::to_string(x));
      return Repr(v);  // int's repr: what json.dumps writes
    }
    if (PyFloat_CheckExact(v)) {
      if (!std::isfinite(PyFloat_AS_DOUBLE(v))) return false;  // allow_nan=False
      return Repr(v);  // float's repr, as json.dumps writes it
    }
    if (PyDict_CheckExact(v) || PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
      // A container met again on its own path is a cycle: json.dumps names it.
      if (std::find(path_.begin(), path_.end(), v) != path_.end()) return false;
      path_.push_back(v);
      bool ok = Container(v, depth);
      path_.pop_back();
      return ok;
    }
    return false;
  }

  std::string& text() { return out_; }

 private:
  bool Container(PyObject* v, int depth) {
    if (PyDict_CheckExact(v)) {
      out_ += '{';
      PyObject *key, *value;
      Py_ssize_t pos = 0;
      bool first = true;
      while (PyDict_Next(v, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) return false;  // json.dumps converts numbers, None, ...
        if (!first) out_ += ", ";
        first = false;
        if (!String(key)) return false;
        out_ += ": ";
        if (!Write(value, depth + 1)) return false;
      }
      out_ += '}';
      return true;
    }
    out_ += '[';  // an exact list or tuple
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    PyObject** items = PySequence_Fast_ITEMS(v);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (i) out_ += ", ";
      if (!Write(items[i], depth + 1)) return false;
    }
    out_ += ']';
    return true;
  }

  bool Put(const std::string& s) {
    out_ += s;
    return true;
  }

  bool Repr(PyObject* v) {
    nb::object r = nb::steal(PyObject_Repr(v));  // released however this returns
    Py_ssize_t n = 0;
    const char* s = r ? PyUnicode_AsUTF8AndSize(r.ptr(), &n) : nullptr;
    if (!s) {  // an int past Python's digit limit: json.dumps raises the same error
      PyErr_Clear();
      return false;
    }
    out_.append(s, static_cast<size_t>(n));
    return true;
  }

  // The UTF-8 of the string, escaped as JSON (support/json.h).
  bool String(PyObject* s) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(s, &n);
    if (!p) {  // a lone surrogate: not UTF-8
      PyErr_Clear();
      return false;
    }
    AppendJsonString(std::string_view(p, static_cast<size_t>(n)), &out_);
    return true;
  }

  std::string out_;
  std::vector<PyObject*> path_;  // the containers being written, outermost first
};

}  // namespace

void BindJsonText(nb::module_& m) {
  m.def(
      "json_text",
      [](nb::handle value) -> std::optional<std::string> {
        PyJsonWriter w;
        if (!w.Write(value.ptr(), 0)) return std::nullopt;
        return std::move(w.text());
      },
      nb::arg("value").none(),
      "JSON text of a value built of dicts with string keys, lists, tuples, strings, ints, finite\n"
      "floats, bools and None (json.dumps's separators; non-ASCII characters raw); None for any\n"
      "other value, to be left to json.dumps.");
}

}  // namespace xgr2
