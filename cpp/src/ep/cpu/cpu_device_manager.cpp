// The CPU device: 64-byte aligned host memory and a synchronous stream.
#include <cstdlib>
#include <cstring>

#include "oneflite/common/error.h"
#include "oneflite/ep/cpu/cpu_stream.h"
#include "oneflite/ep/device_manager.h"

namespace oneflite::ep {

namespace {

// A cache line, and the widest SIMD register, so vector loads never straddle lines.
constexpr size_t kCpuAlignment = 64;

class CpuDeviceManager final : public DeviceManager {
 public:
  DeviceType device_type() const override { return DeviceType::kCPU; }
  int DeviceCount() override { return 1; }
  std::string Describe() override { return "host memory, 64-byte aligned; synchronous stream"; }

  void* Allocate(int /*index*/, size_t nbytes) override {
    if (nbytes == 0) { return nullptr; }
    const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    ONEFLITE_CHECK(ptr != nullptr, RuntimeError, "out of host memory: failed to allocate ",
                   nbytes, " bytes");
    return ptr;
  }
  void Free(int /*index*/, void* ptr) override { std::free(ptr); }

  Stream* GetStream(int /*index*/) override { return &stream_; }

  void Memcpy(Stream* /*stream*/, void* dst, const void* src, size_t nbytes,
              MemcpyKind /*kind*/) override {
    if (nbytes > 0) { std::memcpy(dst, src, nbytes); }
  }

 private:
  CpuStream stream_;
};

ONEFLITE_REGISTER_DEVICE_MANAGER(CpuDeviceManager);

}  // namespace

}  // namespace oneflite::ep
