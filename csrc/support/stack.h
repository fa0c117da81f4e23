// How much of this thread's stack is left. The front ends recurse over nested input
// (subschemas, parentheses, JSON arrays) and bound the depth by limits sized for a stack
// of several MiB; a caller's thread may have less (a Python thread after
// threading.stack_size(1 << 20), a sanitizer build's larger frames). Each recursive step
// also asks StackNearlyFull() and fails with a clear error instead of overflowing.
#pragma once
#include <cstddef>
#include <string>

namespace xgr2 {

// Bytes between the caller's frame and the end of this thread's stack; SIZE_MAX where
// the platform does not say.
size_t StackLeft();

// True when less than a reserve (a quarter of the stack, at most 512 KiB) is left: room
// for the work a recursive step does below the check (automata, error messages).
bool StackNearlyFull();

// The error for input nested deeper than the stack holds: "subschemas nested 412 deep,
// more than this thread's stack holds (N KiB; ...)".
std::string StackMessage(const std::string& what, int depth);

}  // namespace xgr2
