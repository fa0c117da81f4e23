#include "support/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace xgr2 {
namespace {

class Pool;

// One foreground loop, owned by its caller's stack frame. Its indices are taken
// dynamically: the caller from the front, helpers from the back. Each side then tends
// to get the same indices call after call, so data written per index (bitmask rows)
// stays in the cache of the core that writes it.
struct ForLoop {
  const std::function<void(int64_t)>* fn;
  std::atomic<uint64_t> range{0};  // the indices not taken: [high 32 bits, low 32 bits)
  int wanted = 0;                  // helpers still wanted; guarded by the pool's mutex
  int active = 0;                  // helpers inside Work(); guarded by the pool's mutex
  std::atomic<int> busy{0};        // helpers inside Work(), read by the caller's spin
  std::exception_ptr error;
  std::mutex error_mutex;
};

class Background final : public BackgroundJob {
 public:
  Background(Pool& pool, int64_t n, int max_threads, std::function<bool(int64_t)> piece)
      : pool_(pool), n_(n), max_threads_(max_threads), piece_(std::move(piece)) {}
  void Cancel() override;
  bool Done() const override;
  bool Wait(double timeout_s) const override;
  int64_t PiecesDone() const override { return pieces_done_.load(std::memory_order_relaxed); }
  int64_t NumPieces() const override { return n_; }

 private:
  friend class Pool;
  Pool& pool_;
  const int64_t n_;
  const int max_threads_;
  const std::function<bool(int64_t)> piece_;
  // Guarded by the pool's mutex:
  int64_t next_ = 0;   // the next piece to start
  int running_ = 0;    // pieces running now
  bool stopped_ = false;  // cancelled, or a piece said stop or threw
  bool done_ = false;
  std::exception_ptr error_;
  std::atomic<int64_t> pieces_done_{0};
};

class Pool {
 public:
  static Pool& Get() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static teardown
    return *pool;
  }

  int NumWorkers() const { return num_workers_; }

  // Runs a loop of n < 2^32 indices with up to `helpers` workers besides the caller.
  void Run(int64_t n, int helpers, const std::function<void(int64_t)>& fn) {
    ForLoop loop;
    loop.fn = &fn;
    loop.range.store(static_cast<uint64_t>(n));  // [0, n)
    loop.wanted = helpers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      loops_.push_back(&loop);
      loops_queued_.fetch_add(1, std::memory_order_release);
      if (helpers >= idle_) {
        work_cv_.notify_all();
      } else {
        for (int i = 0; i < helpers; ++i) work_cv_.notify_one();
      }
    }
    Work(&loop, false);
    // The helpers are finishing their last index (a bitmask row: microseconds): wait
    // for them spinning, not asleep on the condition variable, whose wake-up costs
    // tens of microseconds on a virtual machine.
    SpinWhile([&] { return loop.busy.load(std::memory_order_acquire) > 0; }, kCallerSpin);
    std::unique_lock<std::mutex> lock(mu_);
    if (loop.wanted > 0) {  // late helpers: no
      loops_.erase(std::find(loops_.begin(), loops_.end(), &loop));
      loops_queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    loop_done_cv_.wait(lock, [&] { return loop.active == 0; });
    if (loop.error) std::rethrow_exception(loop.error);
  }

  std::shared_ptr<BackgroundJob> Submit(int64_t n, int max_threads, std::function<bool(int64_t)> piece) {
    int threads = max_threads <= 0 ? num_workers_ : std::min(max_threads, num_workers_);
    auto job = std::make_shared<Background>(*this, n, threads, std::move(piece));
    std::lock_guard<std::mutex> lock(mu_);
    if (n <= 0) {
      job->done_ = true;
      return job;
    }
    background_.push_back(job);
    work_cv_.notify_all();
    return job;
  }

  void Cancel(Background* job) {
    std::lock_guard<std::mutex> lock(mu_);
    StopLocked(job);
  }

  bool Done(const Background* job) {
    std::lock_guard<std::mutex> lock(mu_);
    return job->done_;
  }

  bool Wait(const Background* job, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    auto done = [&] { return job->done_; };
    if (timeout_s < 0) {
      background_done_cv_.wait(lock, done);
    } else {
      background_done_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), done);
    }
    if (job->done_ && job->error_) std::rethrow_exception(job->error_);
    return job->done_;
  }

 private:
  Pool() {
    // At least one worker, or background jobs would never run.
    unsigned hw = std::max(2u, std::thread::hardware_concurrency());
    num_workers_ = static_cast<int>(hw - 1);
    for (int i = 0; i < num_workers_; ++i) std::thread([this] { WorkerLoop(); }).detach();
  }

  // Takes the next index from the front (or the back); -1 when none is left.
  static int64_t Take(ForLoop* loop, bool from_back) {
    uint64_t r = loop->range.load(std::memory_order_relaxed);
    while (true) {
      uint64_t lo = r >> 32, hi = r & 0xffffffffu;
      if (lo >= hi) return -1;
      uint64_t taken = from_back ? (lo << 32 | (hi - 1)) : ((lo + 1) << 32 | hi);
      if (loop->range.compare_exchange_weak(r, taken, std::memory_order_relaxed)) {
        return static_cast<int64_t>(from_back ? hi - 1 : lo);
      }
    }
  }

  static void Work(ForLoop* loop, bool from_back) {
    for (int64_t i; (i = Take(loop, from_back)) >= 0;) {
      try {
        (*loop->fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(loop->error_mutex);
        if (!loop->error) loop->error = std::current_exception();
        loop->range.store(0);  // nothing left
      }
    }
  }

  // The first background job that may start a piece now, or null.
  std::shared_ptr<Background> RunnableBackground() const {
    for (const auto& job : background_) {
      if (job->running_ < job->max_threads_) return job;
    }
    return nullptr;
  }

  // No piece of `job` starts any more; done once the running ones end.
  void StopLocked(Background* job) {
    if (!job->stopped_) {
      job->stopped_ = true;
      Unqueue(job);
    }
    FinishIfIdle(job);
  }

  void Unqueue(Background* job) {
    auto it = std::find_if(background_.begin(), background_.end(), [&](const auto& j) { return j.get() == job; });
    if (it != background_.end()) background_.erase(it);
  }

  void FinishIfIdle(Background* job) {
    if (job->running_ == 0 && (job->stopped_ || job->next_ >= job->n_) && !job->done_) {
      job->done_ = true;
      background_done_cv_.notify_all();
    }
  }

  void WorkerLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      ++idle_;
      work_cv_.wait(lock, [&] { return !loops_.empty() || RunnableBackground() != nullptr; });
      --idle_;
      if (!loops_.empty()) {  // foreground first
        ForLoop* loop = loops_.front();
        if (--loop->wanted == 0) {
          loops_.pop_front();
          loops_queued_.fetch_sub(1, std::memory_order_relaxed);
        }
        ++loop->active;
        loop->busy.fetch_add(1, std::memory_order_relaxed);
        lock.unlock();
        Work(loop, true);
        loop->busy.fetch_sub(1, std::memory_order_release);
        lock.lock();
        if (--loop->active == 0) loop_done_cv_.notify_all();
        // Decoding loops fill a batch of rows, then advance the batch, then fill again:
        // stay awake a little for the next loop rather than be woken for it.
        lock.unlock();
        SpinWhile([&] { return loops_queued_.load(std::memory_order_acquire) == 0; }, kWorkerSpin);
        lock.lock();
        continue;
      }
      // One piece, then look again: a foreground loop that came meanwhile goes first.
      std::shared_ptr<Background> owner = RunnableBackground();  // the queue may drop it meanwhile
      Background* job = owner.get();
      int64_t i = job->next_++;
      if (job->next_ >= job->n_) Unqueue(job);
      ++job->running_;
      lock.unlock();
      bool go_on = false;
      std::exception_ptr error;
      try {
        go_on = job->piece_(i);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      --job->running_;
      if (go_on) job->pieces_done_.fetch_add(1, std::memory_order_relaxed);
      if (error && !job->error_) job->error_ = error;
      if (!go_on) {
        StopLocked(job);
      } else {
        FinishIfIdle(job);
      }
    }
  }

  // Spins until done() is false or `limit` has passed.
  template <class Done>
  static void SpinWhile(Done&& done, std::chrono::microseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (int k = 0; done(); ++k) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();  // lets the core's other hardware thread run
#endif
      if ((k & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return;
    }
  }
  // How long a caller spins for its helpers' last indices, and a worker for the next
  // foreground loop after one (OpenMP runtimes spin for milliseconds by default).
  static constexpr std::chrono::microseconds kCallerSpin{100}, kWorkerSpin{200};

  int num_workers_ = 0;
  std::atomic<int> loops_queued_{0};  // loops_.size(), read by spinning workers
  std::mutex mu_;
  std::condition_variable work_cv_, loop_done_cv_, background_done_cv_;
  std::deque<ForLoop*> loops_;  // foreground loops that want helpers, oldest first
  std::deque<std::shared_ptr<Background>> background_;  // jobs with pieces to start, oldest first
  int idle_ = 0;  // workers waiting for work
};

void Background::Cancel() { pool_.Cancel(this); }
bool Background::Done() const { return pool_.Done(this); }
bool Background::Wait(double timeout_s) const { return pool_.Wait(this, timeout_s); }

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
  constexpr int64_t kChunk = int64_t{1} << 31;  // a loop's indices fit in 32 bits
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    int64_t count = std::min(kChunk, n - begin);
    if (begin == 0 && count == n) {
      pool.Run(n, helpers, fn);
    } else {
      pool.Run(count, helpers, [&](int64_t i) { fn(begin + i); });
    }
  }
}

std::shared_ptr<BackgroundJob> RunInBackground(int64_t n, int max_threads, std::function<bool(int64_t)> piece) {
  return Pool::Get().Submit(n, max_threads, std::move(piece));
}

}  // namespace xgr2
