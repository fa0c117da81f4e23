// nanobind glue for ComputeTreeMasks (xgr2.tree_masks); arrays arrive validated by
// xgr2/_tree_masks.py and are checked again here so that a direct call cannot crash.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "engine/tree_masks.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace xgr2 {
namespace {

template <typename T>
using Array2 = nb::ndarray<T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Bitmask3 = nb::ndarray<int32_t, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

std::string Shape(size_t a, size_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

// Returns (states per row as lists, truncated per row); fills bitmask, admissible, visited.
using NodeStates = std::vector<std::vector<std::optional<MatcherState>>>;

std::pair<NodeStates, std::vector<bool>> TreeMasks(const std::vector<std::optional<MatcherState>>& roots, Array2<const int32_t> parents,
                    Array2<const int32_t> tokens, Array2<const bool> valid, Bitmask3 bitmask,
                    Array2<bool> admissible, Array2<bool> visited, int64_t max_nodes, int num_threads) {
  const size_t batch = parents.shape(0), nodes = parents.shape(1);
  auto same = [&](size_t r, size_t c, const char* what) {
    if (r != batch || c != nodes) {
      throw nb::value_error((std::string(what) + " must be " + Shape(batch, nodes) + ", got " + Shape(r, c)).c_str());
    }
  };
  same(tokens.shape(0), tokens.shape(1), "tokens");
  same(valid.shape(0), valid.shape(1), "valid");
  same(admissible.shape(0), admissible.shape(1), "admissible");
  same(visited.shape(0), visited.shape(1), "visited");
  same(bitmask.shape(0), bitmask.shape(1), "bitmask");
  DraftTreeView tree{parents.data(), tokens.data(), valid.data(), static_cast<int64_t>(batch),
                     static_cast<int64_t>(nodes)};
  TreeMasksOut out{reinterpret_cast<uint32_t*>(bitmask.data()), static_cast<int64_t>(bitmask.shape(2)),
                   admissible.data(), visited.data(), {}, {}};
  {
    nb::gil_scoped_release release;
    ComputeTreeMasks(roots, tree, max_nodes, num_threads, &out);
  }
  NodeStates states(batch);
  for (size_t b = 0; b < batch; ++b) {
    states[b].reserve(nodes);
    for (size_t i = 0; i < nodes; ++i) states[b].push_back(std::move(out.states[b * nodes + i]));
  }
  return {std::move(states), std::vector<bool>(out.truncated.begin(), out.truncated.end())};
}

}  // namespace

void BindTreeMasks(nb::module_& m) {
  m.def("tree_masks", &TreeMasks, "states"_a, "parents"_a, "tokens"_a, "valid"_a, "bitmask"_a, "admissible"_a, "visited"_a,
        "max_nodes"_a, "num_threads"_a);
}

}  // namespace xgr2
