// BlockCache: the books of a device's freed memory blocks, kept for the next allocation of
// their size instead of handed back to the system or the driver.
//
// Both device managers keep one. On the GPU, handing a block back queues an operation on the
// stream (cuda/ep/cuda_device_manager.cpp says what that costs); on the CPU, the C library may
// give a big block's pages back to the system, and the next tensor of that size then pays a
// page fault for every 4 KiB it writes (cpp/src/ep/cpu/primitive/NOTES.md, section 8).
//
// The caller allocates and frees: BlockCache only records which blocks are live and which are
// kept, under its lock, and says which blocks to free.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace oneflite::ep {

class BlockCache {
 public:
  // Sizes are rounded up to this, so that tensors of nearly the same size share blocks.
  static constexpr size_t kGranule = 512;

  // `limit`: the most bytes kept; a block that does not fit once others are evicted is not kept.
  explicit BlockCache(size_t limit) : limit_(limit) {}

  static size_t Round(size_t nbytes) { return (nbytes + kGranule - 1) / kGranule * kGranule; }

  // A kept block of `rounded` bytes, now live again, or nullptr.
  void* Take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kept_.find(rounded);
    if (it == kept_.end() || it->second.empty()) { return nullptr; }
    void* ptr = it->second.back();
    it->second.pop_back();
    kept_bytes_ -= rounded;
    live_.emplace(ptr, rounded);
    allocated_bytes_ += rounded;
    return ptr;
  }

  // Records a block the device's allocator has just handed out.
  void AddLive(void* ptr, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.emplace(ptr, rounded);
    allocated_bytes_ += rounded;
  }

  // Keeps a freed block. Returns the blocks the caller must free: those evicted to make room
  // (other sizes first), or `ptr` itself when it is not kept (or was never recorded live).
  std::vector<void*> Put(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<void*> release;
    auto live = live_.find(ptr);
    if (live == live_.end()) {  // not from Allocate: nothing to keep
      release.push_back(ptr);
      return release;
    }
    const size_t rounded = live->second;
    live_.erase(live);
    allocated_bytes_ -= rounded;
    for (auto it = kept_.begin(); kept_bytes_ + rounded > limit_ && it != kept_.end(); ++it) {
      if (it->first == rounded) { continue; }
      while (!it->second.empty() && kept_bytes_ + rounded > limit_) {
        release.push_back(it->second.back());
        it->second.pop_back();
        kept_bytes_ -= it->first;
      }
    }
    if (kept_bytes_ + rounded > limit_) {
      release.push_back(ptr);
    } else {
      kept_[rounded].push_back(ptr);
      kept_bytes_ += rounded;
    }
    return release;
  }

  // Every kept block, no longer kept.
  std::vector<void*> TakeAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<void*> all;
    for (auto& [size, blocks] : kept_) { all.insert(all.end(), blocks.begin(), blocks.end()); }
    kept_.clear();
    kept_bytes_ = 0;
    return all;
  }

  size_t allocated_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_bytes_;
  }
  size_t kept_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_bytes_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, size_t> live_;  // allocated blocks and their rounded sizes
  std::unordered_map<size_t, std::vector<void*>> kept_;
  size_t allocated_bytes_ = 0;
  size_t kept_bytes_ = 0;
  const size_t limit_;
};

}  // namespace oneflite::ep
