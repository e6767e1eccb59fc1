// oneflite._C.cuda (device queries), oneflite._C.cpu (its memory cache) and the stream hooks
// DLPack needs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "oneflite/common/error.h"
#include "oneflite/ep/cpu/cpu_threads.h"
#include "oneflite/ep/device_manager.h"

#include <string>

namespace py = pybind11;

namespace oneflite::python {

namespace {

int CudaDeviceCount() {
  ep::DeviceManager* manager = ep::FindDeviceManager(DeviceType::kCUDA);
  return manager == nullptr ? 0 : manager->DeviceCount();
}

}  // namespace

void BindDevices(py::module_& m) {
  py::module_ cuda = m.def_submodule("cuda", "CUDA device queries.");
  cuda.def(
      "is_compiled", [] { return ep::FindDeviceManager(DeviceType::kCUDA) != nullptr; },
      "True when the CUDA backend library is loaded.");
  cuda.def("device_count", &CudaDeviceCount);
  cuda.def("is_available", [] { return CudaDeviceCount() > 0; });
  cuda.def(
      "synchronize",
      [](const Device& device) {
        ONEFLITE_CHECK(device.type == DeviceType::kCUDA, ValueError,
                       "synchronize: expected a CUDA device, got '", device.ToString(), "'");
        ep::GetDeviceManager(device)->GetStream(device.index)->Sync();
      },
      py::arg("device"), py::call_guard<py::gil_scoped_release>());
  auto cuda_manager = [](const Device& device, const char* function) {
    ONEFLITE_CHECK(device.type == DeviceType::kCUDA, ValueError, function,
                   ": expected a CUDA device, got '", device.ToString(), "'");
    return ep::GetDeviceManager(device);
  };
  cuda.def(
      "memory_allocated",
      [cuda_manager](const Device& device) {
        return cuda_manager(device, "memory_allocated")->AllocatedBytes(device.index);
      },
      py::arg("device"));
  cuda.def(
      "memory_cached",
      [cuda_manager](const Device& device) {
        return cuda_manager(device, "memory_cached")->CachedBytes(device.index);
      },
      py::arg("device"));
  cuda.def(
      "empty_cache",
      [cuda_manager](const Device& device) {
        cuda_manager(device, "empty_cache")->EmptyCache(device.index);
      },
      py::arg("device"));

  py::module_ cpu = m.def_submodule("cpu", "The CPU device's memory.");
  auto cpu_manager = [] { return ep::GetDeviceManager(Device{DeviceType::kCPU, 0}); };
  cpu.def("memory_cached", [cpu_manager] { return cpu_manager()->CachedBytes(0); });
  cpu.def("empty_cache", [cpu_manager] { cpu_manager()->EmptyCache(0); });

  m.def("_device_backends", [] {
    py::dict out;
    for (DeviceType type : {DeviceType::kCPU, DeviceType::kCUDA}) {
      ep::DeviceManager* manager = ep::FindDeviceManager(type);
      if (manager != nullptr) { out[NameOf(type)] = manager->Describe(); }
    }
    return out;
  });
  m.def("get_num_threads", &ep::cpu::GetNumThreads,
        "Threads the CPU primitives use (default: OMP_NUM_THREADS, else the CPU count).");
  m.def("set_num_threads", &ep::cpu::SetNumThreads, py::arg("n"),
        "Set the threads the CPU primitives use, for every Python thread.");
  m.def("_build_info", [] {
    py::dict info;
    info["compiler"] = std::string("g++ ") + __VERSION__;
    info["cxx_standard"] = __cplusplus;
#ifdef NDEBUG
    info["build_type"] = "release";
#else
    info["build_type"] = "debug";
#endif
    return info;
  });

  // DLPack stream handshakes, generic over device types.
  m.def(
      "_native_stream",
      [](const Device& device) {
        return ep::GetDeviceManager(device)->NativeStreamHandle(device.index);
      },
      py::arg("device"));
  m.def(
      "_make_external_stream_wait",
      [](const Device& device, uintptr_t external_stream) {
        ep::GetDeviceManager(device)->MakeExternalStreamWait(device.index, external_stream);
      },
      py::arg("device"), py::arg("external_stream"));
  m.def(
      "_synchronize",
      [](const Device& device) { ep::GetDeviceManager(device)->GetStream(device.index)->Sync(); },
      py::arg("device"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace oneflite::python
