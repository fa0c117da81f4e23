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

// Workers wait for a job; a job is one loop, split dynamically by an atomic counter.
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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      wanted_ = helpers;
      ++generation_;
    }
    cv_.notify_all();
    Work(&job);
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;  // late workers must not join a finished job
    done_cv_.wait(lock, [&] { return job.active == 0; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    const std::function<void(int64_t)>* fn;
    int64_t n;
    std::atomic<int64_t> next{0};
    int active = 0;  // workers inside Work(), guarded by mutex_
    std::exception_ptr error;
    std::mutex error_mutex;
  };

  Pool() {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < hw; ++i) workers_.emplace_back([this] { Loop(); });
    for (auto& w : workers_) w.detach();
  }

  static void Work(Job* job) {
    for (int64_t i; (i = job->next.fetch_add(1)) < job->n;) {
      try {
        (*job->fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(job->error_mutex);
        if (!job->error) job->error = std::current_exception();
        job->next.store(job->n);
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
      Work(job);
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
  pool.Run(n, helpers, fn);
}

}  // namespace xgr2
