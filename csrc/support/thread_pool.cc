#include "support/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace xgr2 {
namespace {

// Workers wait for a job; a job is one loop, split dynamically: the caller takes
// indices from the front, helpers from the back. Each side then tends to get the same
// indices call after call, so data written per index (bitmask rows) stays in the cache
// of the core that writes it, instead of moving between cores at every call.
class Pool {
 public:
  static Pool& Get() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static teardown
    return *pool;
  }

  int NumWorkers() const { return static_cast<int>(workers_.size()); }

  void Run(int64_t n, int helpers, const std::function<void(int64_t)>& fn) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // one loop at a time
    Job job{&fn, n};
    job.range.store(static_cast<uint64_t>(n));  // [0, n)
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      wanted_ = helpers;
      ++generation_;
    }
    cv_.notify_all();
    Work(&job, false);
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // late workers must not join a finished job
    done_cv_.wait(lock, [&] { return job.active == 0; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    const std::function<void(int64_t)>* fn;
    int64_t n;
    std::atomic<uint64_t> range{0};  // the indices not taken: [low 32 bits, high 32 bits)
    int active = 0;  // workers inside Work(), guarded by mutex_
    std::exception_ptr error;
    std::mutex error_mutex;
  };

  Pool() {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < hw; ++i) workers_.emplace_back([this] { Loop(); });
    for (auto& w : workers_) w.detach();
  }

  // Takes the next index from the front (or the back); -1 when none is left.
  static int64_t Take(Job* job, bool from_back) {
    uint64_t r = job->range.load(std::memory_order_relaxed);
    while (true) {
      uint64_t lo = r >> 32, hi = r & 0xffffffffu;
      if (lo >= hi) return -1;
      uint64_t taken = from_back ? (lo << 32 | (hi - 1)) : ((lo + 1) << 32 | hi);
      if (job->range.compare_exchange_weak(r, taken, std::memory_order_relaxed)) {
        return static_cast<int64_t>(from_back ? hi - 1 : lo);
      }
    }
  }

  static void Work(Job* job, bool from_back) {
    for (int64_t i; (i = Take(job, from_back)) >= 0;) {
      try {
        (*job->fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(job->error_mutex);
        if (!job->error) job->error = std::current_exception();
        job->range.store(0);  // nothing left
      }
    }
  }

  void Loop() {
    uint64_t seen = 0;
    while (true) {
      Job* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (!job_ || wanted_ <= 0) continue;
        --wanted_;
        job = job_;
        ++job->active;
      }
      Work(job, true);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--job->active == 0) done_cv_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable cv_, done_cv_;
  Job* job_ = nullptr;
  int wanted_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace

void ParallelFor(int64_t n, int max_threads, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  Pool& pool = Pool::Get();
  int threads = max_threads <= 0 ? pool.NumWorkers() + 1 : std::min(max_threads, pool.NumWorkers() + 1);
  int helpers = static_cast<int>(std::min<int64_t>(threads - 1, n - 1));
  if (helpers <= 0) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  constexpr int64_t kChunk = int64_t{1} << 31;  // a job's indices fit in 32 bits
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    int64_t count = std::min(kChunk, n - begin);
    if (begin == 0 && count == n) {
      pool.Run(n, helpers, fn);
    } else {
      pool.Run(count, helpers, [&](int64_t i) { fn(begin + i); });
    }
  }
}

}  // namespace xgr2
