//===- CudaDevice.h - device buffers for the tools' CUDA runs ----*- C++ -*-===//
//
// kiln-run and kiln-conformance run CUDA artifacts on device 0: they need
// device memory, copies and a stream, which the Kiln runtime leaves to the
// caller. This helper gets them from the NVIDIA driver opened with
// dlopen("libcuda.so.1"), like kiln_runtime_cuda, in the device's primary
// context (the one the runtime uses), so the tools start and fail cleanly
// on machines without a GPU. Like any CUDA user, a process that opened a
// device must not fork and use CUDA in the child.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_COMMON_CUDADEVICE_H
#define KILN_TOOLS_COMMON_CUDADEVICE_H

#include <cstddef>
#include <memory>
#include <string>

namespace kiln {

class CudaDevice {
public:
  /// Device `ordinal`'s primary context and a new stream, or null with the
  /// reason in `error`.
  static std::unique_ptr<CudaDevice> open(int ordinal, std::string &error);
  ~CudaDevice();

  /// `bytes` of device memory (at least 256-byte aligned; freed with the
  /// device), or null with the reason in `error`.
  void *allocate(size_t bytes, std::string &error);
  /// Frees memory from allocate() before the device closes; null is ignored.
  void release(void *device);
  bool toDevice(void *device, const void *host, size_t bytes, std::string &error);
  bool toHost(void *host, const void *device, size_t bytes, std::string &error);
  /// Waits for everything enqueued on the stream.
  bool synchronize(std::string &error);
  void *stream() const { return stream_; }

  struct Driver;

private:
  CudaDevice() = default;
  std::unique_ptr<Driver> driver_;
  void *stream_ = nullptr;
};

} // namespace kiln

#endif // KILN_TOOLS_COMMON_CUDADEVICE_H
