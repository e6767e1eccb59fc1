// The CUDA device: stream-ordered memory from each device's cudaMallocAsync pool, with freed
// blocks kept for reuse (BlockCache), and one non-blocking stream per device that all of
// oneflite's work on that device is queued on.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ep/cuda_stream.h"
#include "oneflite/ep/block_cache.h"
#include "oneflite/ep/device_manager.h"

namespace oneflite::ep {

namespace {

std::string VersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Each device's freed blocks are kept for reuse by size (BlockCache). All of oneflite's work on a
// device is queued on the device's one stream, so a block freed there can go to the next
// allocation of its size at once: whatever the new owner queues runs after everything queued for
// the old one. cudaFreeAsync gives the same guarantee, but it queues an operation on the stream,
// and that costs about 0.6 us of GPU time between two kernels on an H200: 4-10% of a softmax of a
// few MB (cuda/ep/primitive/NOTES.md, item 31). Handing a block back to the pool is left to
// eviction, to EmptyCache (oneflite.cuda.empty_cache()) and to a failed allocation. The most a
// device's BlockCache keeps: an eighth of the device's memory.
constexpr size_t kCacheFraction = 8;

class CudaDeviceManager final : public DeviceManager {
 public:
  DeviceType device_type() const override { return DeviceType::kCUDA; }

  int DeviceCount() override {
    std::call_once(count_once_, [this] {
      int count = 0;
      // No driver or no GPU is not an error here: it means zero devices.
      if (cudaGetDeviceCount(&count) != cudaSuccess) {
        count = 0;
        cudaGetLastError();
      }
      count_ = count;
      streams_.resize(count);
      caches_.resize(count);
      stream_once_ = std::make_unique<std::once_flag[]>(count);
    });
    return count_;
  }

  std::string Describe() override {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    int driver = 0;
    const bool has_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
    cudaGetLastError();
    std::string text = "CUDA runtime " + VersionString(runtime) + " (static), built for " +
                       ONEFLITE_CUDA_ARCHITECTURES + "; ";
    text += has_driver ? "driver " + VersionString(driver) : std::string("no CUDA driver");
    const int count = DeviceCount();
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      const CudaDeviceInfo info = CudaDeviceInfo::Read(i);
      text += "\ncuda:" + std::to_string(i) + " " + prop.name + ", sm_" +
              std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
              std::to_string(prop.multiProcessorCount) + " SMs, " +
              std::to_string(prop.totalGlobalMem >> 20) + " MiB, " +
              std::to_string(std::lround(info.PeakDramGBps())) + " GB/s peak DRAM, " +
              std::to_string(info.l2_cache_bytes >> 20) + " MiB L2";
    }
    return text;
  }

  void* Allocate(int index, size_t nbytes) override {
    if (nbytes == 0) { return nullptr; }
    CudaStream* stream = Stream(index);
    BlockCache& cache = *caches_[index];  // created with the stream
    const size_t rounded = BlockCache::Round(nbytes);
    if (void* kept = cache.Take(rounded)) { return kept; }
    CudaDeviceGuard guard(index);
    void* ptr = nullptr;
    cudaError_t status = cudaMallocAsync(&ptr, rounded, stream->cuda_stream());
    if (status == cudaErrorMemoryAllocation) {
      // The pool may fit the block once the kept ones are back in it.
      cudaGetLastError();
      Release(index, cache.TakeAll());
      status = cudaMallocAsync(&ptr, rounded, stream->cuda_stream());
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      ONEFLITE_THROW(RuntimeError, "CUDA error: ", cudaGetErrorString(status), " (",
                     cudaGetErrorName(status), ") allocating ", nbytes, " bytes on cuda:", index);
    }
    cache.AddLive(ptr, rounded);
    return ptr;
  }

  void Free(int index, void* ptr) override {
    if (ptr == nullptr) { return; }
    // Called from tensor destructors: it must not throw.
    Release(index, caches_[index]->Put(ptr));
  }

  size_t AllocatedBytes(int index) override { return Cache(index).allocated_bytes(); }
  size_t CachedBytes(int index) override { return Cache(index).kept_bytes(); }
  void EmptyCache(int index) override { Release(index, Cache(index).TakeAll()); }

  void SynchronizeDevice(int index) override {
    CudaDeviceGuard guard(index);
    ONEFLITE_CUDA_CHECK(cudaDeviceSynchronize());
  }

  void SetActiveDevice(int index) override { ONEFLITE_CUDA_CHECK(cudaSetDevice(index)); }

  ep::Stream* GetStream(int index) override { return Stream(index); }

  void Memcpy(ep::Stream* stream, void* dst, const void* src, size_t nbytes,
              MemcpyKind kind) override {
    auto* cuda = static_cast<CudaStream*>(stream);
    CudaDeviceGuard guard(cuda->device_info().index);
    const cudaMemcpyKind cuda_kind = kind == MemcpyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                                     : kind == MemcpyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                                         : cudaMemcpyDefault;
    ONEFLITE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cuda_kind, cuda->cuda_stream()));
    ONEFLITE_CUDA_CHECK(cudaStreamSynchronize(cuda->cuda_stream()));
  }

  uintptr_t NativeStreamHandle(int index) override {
    return reinterpret_cast<uintptr_t>(Stream(index)->cuda_stream());
  }

  void MakeExternalStreamWait(int index, uintptr_t external_stream) override {
    CudaStream* stream = Stream(index);
    CudaDeviceGuard guard(index);
    cudaEvent_t event = nullptr;
    ONEFLITE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(event, stream->cuda_stream());
    const cudaError_t waited =
        recorded == cudaSuccess
            ? cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(external_stream), event, 0)
            : recorded;
    cudaEventDestroy(event);  // safe: destruction is deferred until the event completes
    ONEFLITE_CUDA_CHECK(waited);
  }

 private:
  // Hands blocks back to the device's pool, ordered after the work queued so far. Must not throw
  // (Free calls it); at process exit the runtime may be gone already, and then there is nothing
  // left to free.
  void Release(int index, const std::vector<void*>& blocks) {
    if (blocks.empty()) { return; }
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) { return; }
    if (previous != index) { cudaSetDevice(index); }
    for (void* ptr : blocks) { cudaFreeAsync(ptr, streams_[index]->cuda_stream()); }
    if (previous != index) { cudaSetDevice(previous); }
    cudaGetLastError();
  }

  BlockCache& Cache(int index) {
    Stream(index);  // checks the index and creates the cache
    return *caches_[index];
  }

  CudaStream* Stream(int index) {
    const int count = DeviceCount();
    ONEFLITE_CHECK(index >= 0 && index < count, RuntimeError, "device 'cuda:", index,
                   "' is not available: ", count, " CUDA device(s) found");
    std::call_once(stream_once_[index], [this, index] {
      streams_[index] = std::make_unique<CudaStream>(index);
      // Keep freed blocks in the pool instead of returning them to the driver at every
      // synchronization, so steady-state allocation is a pool hit.
      cudaMemPool_t pool = nullptr;
      ONEFLITE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, index));
      uint64_t threshold = UINT64_MAX;
      ONEFLITE_CUDA_CHECK(
          cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
      size_t free_bytes = 0, total_bytes = 0;
      {
        CudaDeviceGuard guard(index);
        ONEFLITE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      }
      caches_[index] = std::make_unique<BlockCache>(total_bytes / kCacheFraction);
    });
    return streams_[index].get();
  }

  std::once_flag count_once_;
  int count_ = 0;
  std::unique_ptr<std::once_flag[]> stream_once_;
  std::vector<std::unique_ptr<CudaStream>> streams_;
  std::vector<std::unique_ptr<BlockCache>> caches_;
};

ONEFLITE_REGISTER_DEVICE_MANAGER(CudaDeviceManager);

}  // namespace

}  // namespace oneflite::ep
