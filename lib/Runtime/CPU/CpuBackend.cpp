//===- CpuBackend.cpp - The CPU backend -----------------------------------===//

#include "partita/Runtime/Program/Backend.h"
#include "partita/Runtime/CPU/Kernels.h"

#include <cstdlib>
#include <cstring>
#include <unordered_map>

using namespace partita;

Backend::~Backend() = default;

namespace {

class CpuBackend final : public Backend {
public:
  const char *name() const override { return "cpu"; }

  Expected<void *> allocate(int64_t bytes) override {
    if (bytes < 0)
      return Status::error("cpu: cannot allocate a negative size");
    void *memory = std::calloc(static_cast<size_t>(bytes > 0 ? bytes : 1), 1);
    if (!memory)
      return Status::error("cpu: out of memory allocating " +
                           std::to_string(bytes) + " bytes");
    sizes[memory] = bytes;
    held += bytes;
    peak = std::max(peak, held);
    return memory;
  }
  void release(void *device) override {
    auto it = sizes.find(device);
    if (it != sizes.end()) {
      held -= it->second;
      sizes.erase(it);
    }
    std::free(device);
  }
  int64_t peakBytes() const override { return peak; }

  Status copyToDevice(void *device, const void *host, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(device, host, static_cast<size_t>(bytes));
    return Status::success();
  }
  Status copyToHost(void *host, const void *device, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(host, device, static_cast<size_t>(bytes));
    return Status::success();
  }
  Status copyOnDevice(void *to, const void *from, int64_t bytes) override {
    if (bytes > 0 && to != from)
      std::memmove(to, from, static_cast<size_t>(bytes));
    return Status::success();
  }

  Status run(const Instruction &inst,
             const std::vector<TensorType> &operandTypes,
             const std::vector<const void *> &operands,
             const std::vector<TensorType> &resultTypes,
             const std::vector<void *> &results,
             const std::vector<HostArray> &constants) override {
    return cpu::runKernel(inst, operandTypes, operands, resultTypes, results,
                          &constants);
  }

  Status synchronize() override { return Status::success(); }

private:
  std::unordered_map<void *, int64_t> sizes;
  int64_t held = 0, peak = 0;
};

} // namespace

std::unique_ptr<Backend> partita::createCpuBackend() {
  return std::make_unique<CpuBackend>();
}
