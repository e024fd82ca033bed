//===- CudaDevice.cpp - device buffers for the tools' CUDA runs -----------===//

#include "CudaDevice.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <vector>

using namespace kiln;

struct CudaDevice::Driver {
  void *library = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::vector<CUdeviceptr> allocations;
  CUresult (*init)(unsigned);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*primaryCtxRelease)(CUdevice);
  CUresult (*ctxPushCurrent)(CUcontext);
  CUresult (*ctxPopCurrent)(CUcontext *);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*getErrorString)(CUresult, const char **);

  std::string why(const char *what, CUresult rc) const {
    const char *s = nullptr;
    if (getErrorString == nullptr || getErrorString(rc, &s) != CUDA_SUCCESS || s == nullptr)
      s = "unknown CUDA error";
    return std::string(what) + ": " + s;
  }
};

std::unique_ptr<CudaDevice> CudaDevice::open(int ordinal, std::string &error) {
  std::unique_ptr<CudaDevice> dev(new CudaDevice());
  dev->driver_ = std::make_unique<Driver>();
  Driver &d = *dev->driver_;
  d.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (d.library == nullptr) {
    const char *why = dlerror();
    error = std::string("cannot load the NVIDIA driver library libcuda.so.1 (") + (why ? why : "not found") +
            "): no driver or GPU";
    return nullptr;
  }
  struct {
    void *slot;
    const char *name;
  } symbols[] = {
      {&d.init, "cuInit"},
      {&d.deviceGet, "cuDeviceGet"},
      {&d.primaryCtxRetain, "cuDevicePrimaryCtxRetain"},
      {&d.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
      {&d.ctxPushCurrent, "cuCtxPushCurrent_v2"},
      {&d.ctxPopCurrent, "cuCtxPopCurrent_v2"},
      {&d.memAlloc, "cuMemAlloc_v2"},
      {&d.memFree, "cuMemFree_v2"},
      {&d.memcpyHtoD, "cuMemcpyHtoD_v2"},
      {&d.memcpyDtoH, "cuMemcpyDtoH_v2"},
      {&d.streamCreate, "cuStreamCreate"},
      {&d.streamDestroy, "cuStreamDestroy_v2"},
      {&d.streamSynchronize, "cuStreamSynchronize"},
      {&d.getErrorString, "cuGetErrorString"},
  };
  for (auto &s : symbols) {
    void *fn = dlsym(d.library, s.name);
    if (fn == nullptr) {
      error = std::string("libcuda.so.1 lacks ") + s.name + " (driver too old?)";
      return nullptr;
    }
    std::memcpy(s.slot, &fn, sizeof fn);
  }
  CUresult rc;
  if ((rc = d.init(0)) != CUDA_SUCCESS) {
    error = d.why("no usable GPU", rc);
    return nullptr;
  }
  if ((rc = d.deviceGet(&d.device, ordinal)) != CUDA_SUCCESS ||
      (rc = d.primaryCtxRetain(&d.context, d.device)) != CUDA_SUCCESS) {
    d.context = nullptr;
    error = d.why(("device " + std::to_string(ordinal)).c_str(), rc);
    return nullptr;
  }
  if ((rc = d.ctxPushCurrent(d.context)) != CUDA_SUCCESS) {
    error = d.why("cannot make the device current", rc);
    return nullptr;
  }
  CUstream stream = nullptr;
  if ((rc = d.streamCreate(&stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    error = d.why("cannot create a stream", rc);
    return nullptr;
  }
  dev->stream_ = stream;
  return dev;
}

CudaDevice::~CudaDevice() {
  if (!driver_)
    return;
  Driver &d = *driver_;
  if (d.context != nullptr) {
    if (stream_ != nullptr)
      d.streamDestroy(static_cast<CUstream>(stream_));
    for (CUdeviceptr p : d.allocations)
      d.memFree(p);
    CUcontext ignored;
    d.ctxPopCurrent(&ignored);
    d.primaryCtxRelease(d.device);
  }
  if (d.library != nullptr)
    dlclose(d.library);
}

void *CudaDevice::allocate(size_t bytes, std::string &error) {
  CUdeviceptr p = 0;
  CUresult rc = driver_->memAlloc(&p, bytes == 0 ? 1 : bytes);
  if (rc != CUDA_SUCCESS) {
    error = driver_->why(("cannot allocate " + std::to_string(bytes) + " bytes on the device").c_str(), rc);
    return nullptr;
  }
  driver_->allocations.push_back(p);
  return reinterpret_cast<void *>(static_cast<uintptr_t>(p));
}

void CudaDevice::release(void *device) {
  if (device == nullptr)
    return;
  CUdeviceptr p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device));
  for (size_t i = 0; i < driver_->allocations.size(); ++i)
    if (driver_->allocations[i] == p) {
      driver_->allocations.erase(driver_->allocations.begin() + i);
      driver_->memFree(p);
      return;
    }
}

bool CudaDevice::toDevice(void *device, const void *host, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  CUresult rc = driver_->memcpyHtoD(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device)), host, bytes);
  if (rc != CUDA_SUCCESS)
    error = driver_->why("copying to the device failed", rc);
  return rc == CUDA_SUCCESS;
}

bool CudaDevice::toHost(void *host, const void *device, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  CUresult rc = driver_->memcpyDtoH(host, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device)), bytes);
  if (rc != CUDA_SUCCESS)
    error = driver_->why("copying from the device failed", rc);
  return rc == CUDA_SUCCESS;
}

bool CudaDevice::synchronize(std::string &error) {
  CUresult rc = driver_->streamSynchronize(static_cast<CUstream>(stream_));
  if (rc != CUDA_SUCCESS)
    error = driver_->why("the run failed on the device", rc);
  return rc == CUDA_SUCCESS;
}
