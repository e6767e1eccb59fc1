#include "oneflite/ep/cpu/cpu_threads.h"

#include <atomic>

#include "oneflite/common/error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oneflite::ep::cpu {

namespace {

std::atomic<int>& Threads() {
#ifdef _OPENMP
  static std::atomic<int> threads{omp_get_max_threads()};
#else
  static std::atomic<int> threads{1};
#endif
  return threads;
}

}  // namespace

int GetNumThreads() { return Threads().load(std::memory_order_relaxed); }

void SetNumThreads(int n) {
  ONEFLITE_CHECK(n >= 1, ValueError, "set_num_threads: expected a positive count, got ", n);
  Threads().store(n, std::memory_order_relaxed);
}

}  // namespace oneflite::ep::cpu
