#include "support/stack.h"

#include <algorithm>
#include <cstdint>

#if defined(__linux__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace xgr2 {
namespace {

struct StackBounds {
  uintptr_t low = 0;  // the end the stack grows towards; 0: unknown
  size_t size = 0;
};

StackBounds QueryBounds() {
  StackBounds b;
#if defined(__linux__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.low = reinterpret_cast<uintptr_t>(addr);
      b.size = size;
    }
    pthread_attr_destroy(&attr);
  }
#elif defined(__APPLE__)
  size_t size = pthread_get_stacksize_np(pthread_self());
  b.low = reinterpret_cast<uintptr_t>(pthread_get_stackaddr_np(pthread_self())) - size;
  b.size = size;
#endif
  return b;
}

const StackBounds& Bounds() {
  thread_local const StackBounds bounds = QueryBounds();
  return bounds;
}

}  // namespace

size_t StackLeft() {
  const StackBounds& b = Bounds();
  if (b.low == 0) return SIZE_MAX;
#if defined(__GNUC__)
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
#else
  char marker = 0;
  auto here = reinterpret_cast<uintptr_t>(&marker);
#endif
  // A frame outside the thread's stack (a coroutine's or fiber's own stack, a signal
  // stack): nothing known about it.
  if (here < b.low || here - b.low > b.size) return SIZE_MAX;
  return here - b.low;
}

bool StackNearlyFull() {
  const StackBounds& b = Bounds();
  if (b.low == 0) return false;
  return StackLeft() < std::min<size_t>(b.size / 4, size_t{512} << 10);
}

std::string StackMessage(const std::string& what, int depth) {
  return what + " nested " + std::to_string(depth) + " deep, more than this thread's stack holds (" +
         std::to_string(Bounds().size >> 10) + " KiB; call from a thread with a larger stack)";
}

}  // namespace xgr2
