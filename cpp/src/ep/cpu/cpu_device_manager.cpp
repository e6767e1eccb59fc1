// The CPU device: 64-byte aligned host memory, with freed blocks of 1 MiB and more kept for
// reuse (BlockCache), and a synchronous stream.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "oneflite/common/error.h"
#include "oneflite/ep/block_cache.h"
#include "oneflite/ep/cpu/cpu_stream.h"
#include "oneflite/ep/device_manager.h"

namespace oneflite::ep {

namespace {

// A cache line, and the widest SIMD register, so vector loads never straddle lines.
constexpr size_t kCpuAlignment = 64;

// Blocks from this size up are kept when freed. The C library serves them from memory it may
// hand back to the system when they are freed (mmap, or a trimmed heap), and then the next
// tensor of that size page-faults on every 4 KiB it writes: measured 4064 faults for a 16 MiB
// softmax output, a call after call, and 0.71-0.75x torch's speed instead of 1.10-1.13x at 16
// threads (cpp/src/ep/cpu/primitive/NOTES.md, section 8). Smaller blocks stay with malloc, whose
// own free lists serve them well.
constexpr size_t kKeepFromBytes = size_t{1} << 20;

// The most the cache keeps: a sixteenth of the machine's memory (1 GiB where that is unknown).
size_t CacheLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) { return size_t{1} << 30; }
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size) / 16;
}

class CpuDeviceManager final : public DeviceManager {
 public:
  DeviceType device_type() const override { return DeviceType::kCPU; }
  int DeviceCount() override { return 1; }
  std::string Describe() override {
    return "host memory, 64-byte aligned, freed blocks of 1 MiB and more kept for reuse; "
           "synchronous stream";
  }

  void* Allocate(int /*index*/, size_t nbytes) override {
    if (nbytes == 0) { return nullptr; }
    // Rounded to the cache's granule, a multiple of the alignment, as aligned_alloc requires.
    const size_t rounded = BlockCache::Round(nbytes);
    const bool keep = rounded >= kKeepFromBytes;
    if (keep) {
      if (void* kept = cache_.Take(rounded)) { return kept; }
    }
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    ONEFLITE_CHECK(ptr != nullptr, RuntimeError, "out of host memory: failed to allocate ", nbytes,
                   " bytes");
    if (keep) { cache_.AddLive(ptr, rounded); }
    return ptr;
  }

  // Blocks the cache did not hand out (the small ones) come back from Put to be freed.
  void Free(int /*index*/, void* ptr) override {
    if (ptr == nullptr) { return; }
    for (void* block : cache_.Put(ptr)) { std::free(block); }
  }

  size_t CachedBytes(int /*index*/) override { return cache_.kept_bytes(); }
  void EmptyCache(int /*index*/) override {
    for (void* block : cache_.TakeAll()) { std::free(block); }
  }

  Stream* GetStream(int /*index*/) override { return &stream_; }

  void Memcpy(Stream* /*stream*/, void* dst, const void* src, size_t nbytes,
              MemcpyKind /*kind*/) override {
    if (nbytes > 0) { std::memcpy(dst, src, nbytes); }
  }

 private:
  CpuStream stream_;
  BlockCache cache_{CacheLimit()};
};

ONEFLITE_REGISTER_DEVICE_MANAGER(CpuDeviceManager);

}  // namespace

}  // namespace oneflite::ep
