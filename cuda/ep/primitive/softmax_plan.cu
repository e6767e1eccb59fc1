// The launch planner's host-side helpers: the occupancy and device-info caches PlanSoftmax
// reads, and the text Describe prints. Kept apart from the registration (softmax.cu) so that
// tools/softmax_lab.cu can link the planner without the framework.
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "ep/primitive/softmax_kernels.cuh"

namespace oneflite::ep::primitive {

namespace cuda_softmax {

// What the runtime answers about a kernel on a device, asked once a key: the first Get of a key
// runs `ask` under the cache's lock (it may also set the kernel's attributes) and keeps its
// answer. The runtime's occupancy calculator costs microseconds, and one launch may ask it
// several times.
template <typename Key, typename Value>
class AnswerCache {
 public:
  template <typename Ask>
  Value Get(const Key& key, Ask&& ask) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = answers_.find(key); it != answers_.end()) { return it->second; }
    const Value answer = ask();
    answers_.emplace(key, answer);
    return answer;
  }

 private:
  std::mutex mutex_;
  std::map<Key, Value> answers_;
};

size_t MaxDynamicSmem(const void* kernel, const CudaDeviceInfo& info) {
  static AnswerCache<std::pair<const void*, int>, size_t> limits;
  return limits.Get(std::make_pair(kernel, info.index), [&] {
    cudaFuncAttributes attributes;
    ONEFLITE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    const size_t optin = static_cast<size_t>(info.max_shared_memory_per_block_optin);
    const size_t limit =
        optin > attributes.sharedSizeBytes ? optin - attributes.sharedSizeBytes : 0;
    ONEFLITE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(limit)));
    return limit;
  });
}

size_t HoldBlocksPerSmSmem(const void* kernel, const CudaDeviceInfo& info, int block_size,
                           int blocks) {
  static AnswerCache<std::tuple<const void*, int, int, int>, size_t> answers;
  return answers.Get(std::make_tuple(kernel, info.index, block_size, blocks), [&] {
    cudaFuncAttributes attributes;
    ONEFLITE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    // A block's shared memory: `blocks` fit in the carve-out with the 1 KiB the driver reserves
    // for each block (sm_80 on), and one more would not fit even without it. In steps of 128
    // bytes, the unit shared memory is allocated in.
    constexpr int kReservedPerBlock = 1024;
    const int per_block = (kHoldCarveoutBytes / blocks - kReservedPerBlock) / 128 * 128;
    const int dynamic = per_block - static_cast<int>(attributes.sharedSizeBytes);
    if (dynamic <= 0 || (blocks + 1) * per_block <= kHoldCarveoutBytes) { return size_t{0}; }
    // The preference is a percentage of the SM's shared memory, which the driver rounds up to a
    // carve-out it has: rounded down here, so that it lands on kHoldCarveoutBytes.
    const int percent =
        static_cast<int>(int64_t{kHoldCarveoutBytes} * 100 / info.max_shared_memory_per_sm);
    ONEFLITE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
    int active = 0;
    ONEFLITE_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, kernel, block_size, dynamic));
    if (active == blocks) { return static_cast<size_t>(dynamic); }
    ONEFLITE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                             cudaSharedmemCarveoutDefault));
    return size_t{0};
  });
}

int CarveoutBlocksPerSm(const void* kernel, const CudaDeviceInfo& info, int block_size,
                        cudaSharedCarveout carveout) {
  static AnswerCache<std::tuple<const void*, int, int, int>, int> answers;
  const auto key = std::make_tuple(kernel, info.index, block_size, static_cast<int>(carveout));
  return answers.Get(key, [&] {
    ONEFLITE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
    int blocks = 0;
    ONEFLITE_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_size, 0));
    return blocks;
  });
}

int MaxActiveBlocksPerSm(const void* kernel, const CudaDeviceInfo& info, int block_size,
                         size_t dynamic_smem) {
  static AnswerCache<std::tuple<const void*, int, int, size_t>, int> answers;
  return answers.Get(std::make_tuple(kernel, info.index, block_size, dynamic_smem), [&] {
    int blocks = 0;
    ONEFLITE_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_size, dynamic_smem));
    return blocks;
  });
}

int KernelPtxVersion(const void* kernel, const CudaDeviceInfo& info) {
  static AnswerCache<std::pair<const void*, int>, int> versions;
  return versions.Get(std::make_pair(kernel, info.index), [&] {
    cudaFuncAttributes attributes;
    ONEFLITE_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    return attributes.ptxVersion;
  });
}

const CudaDeviceInfo& CurrentDeviceInfo() {
  static std::mutex mutex;
  static std::map<int, CudaDeviceInfo> infos;  // std::map: references stay valid as it grows
  int device = 0;
  ONEFLITE_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = infos.find(device); it != infos.end()) { return it->second; }
  return infos.emplace(device, CudaDeviceInfo::Read(device)).first->second;
}

std::string ToString(const Plan& plan) {
  std::ostringstream out;
  switch (plan.path) {
    case Path::kWarp:
      out << "warp: pack=" << plan.pack << " cols_per_thread=" << plan.cols_per_thread
          << " thread_group_width=" << plan.width << " rows_per_access=" << plan.rows_per_access
          << (plan.ragged ? " ragged" : "") << " block=" << plan.block
          << (plan.one_row ? " one_row" : "") << (plan.read_ahead ? " read_ahead" : "");
      break;
    case Path::kBlockSmem:
      out << "block_smem: pack=" << plan.pack << " block=" << plan.block << " smem=" << plan.smem
          << (plan.read_ahead ? " read_ahead" : "");
      break;
    case Path::kBlockOnline:
      out << "block_online: pack=" << plan.pack << " block=" << plan.block << " smem=" << plan.smem
          << " cached_cols=" << static_cast<int64_t>(plan.cached_packs) * plan.pack;
      break;
    case Path::kBlockRegisters:
      out << "block_registers: pack=" << plan.pack << " cols_per_thread=" << plan.cols_per_thread
          << " block=" << plan.block;
      if (plan.max_l1) {
        out << " held_per_sm=" << plan.held_per_sm << " carveout=max_l1";
      } else if (plan.held_per_sm > 0) {
        out << " smem=" << plan.smem << " held_per_sm=" << plan.held_per_sm;
      } else if (plan.smem > 0) {
        out << " smem=" << plan.smem
            << " tail_cols=" << static_cast<int64_t>(plan.cached_packs) * plan.pack;
      }
      out << (plan.max_shared ? " carveout=max_shared" : "") << (plan.ragged ? " ragged" : "")
          << (plan.bulk_load ? " bulk_load" : "") << (plan.one_row ? " one_row" : "")
          << (plan.read_ahead ? " read_ahead" : "");
      break;
    case Path::kWarpTile:
      out << "warp_tile: pack=" << plan.pack << " cols_per_thread=" << plan.cols_per_thread
          << " thread_group_width=" << plan.width << " rows_per_tile=" << kWarpSize / plan.width
          << " tiles_per_warp=" << plan.tiles_per_warp << " block=" << plan.block
          << " smem=" << plan.smem;
      break;
  }
  out << " grid=" << plan.grid << (plan.persistent ? " (persistent)" : "");
  if (plan.stagger.blocks > 0) {
    out << " stagger=" << kStaggerGroups << "x" << plan.stagger.cycles << "clk";
  }
  return out.str();
}

}  // namespace cuda_softmax

}  // namespace oneflite::ep::primitive
