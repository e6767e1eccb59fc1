// The device layer: one DeviceManager per device type owns that type's memory and streams.
//
// The core library registers the CPU manager; the CUDA backend, a separate shared library,
// registers the CUDA manager when it is loaded. Code above this layer asks the registry for the
// manager of a tensor's device type and never names a backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "oneflite/common/device.h"
#include "oneflite/ep/stream.h"

namespace oneflite::ep {

enum class MemcpyKind {
  kHostToDevice,
  kDeviceToHost,
  kDeviceToDevice,
};

class DeviceManager {
 public:
  virtual ~DeviceManager() = default;

  virtual DeviceType device_type() const = 0;
  // How many devices of this type are usable now. 0 when the runtime or driver is missing.
  virtual int DeviceCount() = 0;
  // A line or two for `python -m oneflite`: the backend's build and the devices it sees.
  virtual std::string Describe() = 0;

  // Stream-ordered memory on device `index`. Allocate throws RuntimeError on failure and returns
  // nullptr only for nbytes == 0. Free is safe to call with nullptr.
  virtual void* Allocate(int index, size_t nbytes) = 0;
  virtual void Free(int index, void* ptr) = 0;

  // For a manager that keeps freed blocks for reuse (BlockCache): the bytes of device `index` in
  // live allocations (CUDA counts them; the CPU, which keeps only blocks of 1 MiB and more, does
  // not), the bytes kept, and a way to hand the kept ones back to the device's allocator. A
  // manager that keeps nothing reports 0 for both.
  virtual size_t AllocatedBytes(int index) { return 0; }
  virtual size_t CachedBytes(int index) { return 0; }
  virtual void EmptyCache(int index) {}

  // Makes device `index` the one the calling thread's launches go to (a no-op on the CPU).
  virtual void SetActiveDevice(int index) {}

  // The stream oneflite queues work on for device `index`. Owned by the manager.
  virtual Stream* GetStream(int index) = 0;

  // Interop with other libraries' streams (DLPack). The native handle of oneflite's stream
  // for device `index` (a cudaStream_t as an integer; 0 on the CPU) ...
  virtual uintptr_t NativeStreamHandle(int index) { return 0; }
  // ... and a way to make another library's stream wait for the work queued so far on it.
  virtual void MakeExternalStreamWait(int index, uintptr_t external_stream) {}

  // Blocks until all work on device `index`, from any library, has finished. Used around code
  // oneflite cannot order by streams, such as a Python-registered primitive.
  virtual void SynchronizeDevice(int index) {}

  // Copies nbytes, ordered on `stream`, and returns once the copy is complete, so the host side
  // of a host<->device copy may be reused or read right away.
  virtual void Memcpy(Stream* stream, void* dst, const void* src, size_t nbytes,
                      MemcpyKind kind) = 0;
};

// Registers `manager` for its device type. Throws ValueError if that type already has one.
void RegisterDeviceManager(std::unique_ptr<DeviceManager> manager);
// The manager for `type`, or nullptr if no backend for that type has been loaded.
DeviceManager* FindDeviceManager(DeviceType type);
// As FindDeviceManager, but throws RuntimeError naming the missing backend, and checks that
// `device.index` is in range.
DeviceManager* GetDeviceManager(const Device& device);

}  // namespace oneflite::ep

#define ONEFLITE_EP_CONCAT_INNER(a, b) a##b
#define ONEFLITE_EP_CONCAT(a, b) ONEFLITE_EP_CONCAT_INNER(a, b)

// Registers a DeviceManager subclass when the shared library holding this line is loaded.
#define ONEFLITE_REGISTER_DEVICE_MANAGER(ManagerClass)                                       \
  [[maybe_unused]] static const bool ONEFLITE_EP_CONCAT(oneflite_device_manager_registered_, \
                                                        __LINE__) = [] {                     \
    ::oneflite::ep::RegisterDeviceManager(std::make_unique<ManagerClass>());                 \
    return true;                                                                             \
  }()
