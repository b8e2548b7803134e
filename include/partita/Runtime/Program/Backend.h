//===- Backend.h - Where a device's buffers live and its kernels run -*- C++
//-*-===//
//
// The narrow interface between the interpreter and a kind of device:
// allocate and free device memory, copy between host and device (and within
// the device), run one tensor instruction on device buffers, wait for queued
// work. The CPU backend (below) is the reference every other backend is
// compared with; a CUDA backend implements the same calls with a caching
// allocator, streams, cuBLAS and its own kernels. Collectives go through a
// Communicator, not through the backend.
//
// Pointers handed out by allocate() are device addresses: the interpreter
// never dereferences them itself, it only passes them back to the backend
// (and to a communicator of the same kind of device).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_BACKEND_H
#define PARTITA_RUNTIME_BACKEND_H

#include "partita/Runtime/IO/HostArray.h"
#include "partita/Runtime/Program/Instruction.h"

#include <memory>
#include <vector>

namespace partita {

/// One kind of device.
class Backend {
public:
  virtual ~Backend();

  /// "cpu", "cuda", ...
  virtual const char *name() const = 0;

  /// `bytes` of zeroed device memory (at least one byte).
  virtual Expected<void *> allocate(int64_t bytes) = 0;
  /// Returns memory from allocate().
  virtual void release(void *device) = 0;
  /// The most bytes held from allocate() at once so far (measured, for the
  /// memory figures `partita run` prints).
  virtual int64_t peakBytes() const = 0;

  /// Host to device, device to host, and within the device (the ranges may
  /// overlap for the latter).
  virtual Status copyToDevice(void *device, const void *host,
                              int64_t bytes) = 0;
  virtual Status copyToHost(void *host, const void *device, int64_t bytes) = 0;
  virtual Status copyOnDevice(void *to, const void *from, int64_t bytes) = 0;

  /// Runs one tensor instruction (not a collective, not a loop) on device
  /// buffers; `constants` is the program's constant pool, in host memory.
  virtual Status run(const Instruction &inst,
                     const std::vector<TensorType> &operandTypes,
                     const std::vector<const void *> &operands,
                     const std::vector<TensorType> &resultTypes,
                     const std::vector<void *> &results,
                     const std::vector<HostArray> &constants) = 0;

  /// Waits until all queued work is done (a no-op where work is
  /// synchronous).
  virtual Status synchronize() = 0;
  /// Whether device memory is this process's memory (the CPU backend's):
  /// a run may then write an input straight into its buffer.
  virtual bool hostAddressable() const { return false; }
};

/// The CPU backend: host memory, the kernels of lib/Runtime/CPU.
std::unique_ptr<Backend> createCpuBackend();

/// Frees the blocks CPU backends released and keep for the next backend
/// of the same size (up to 1 GiB: a loop that makes a backend per step
/// would otherwise fault its memory in anew each time). A run that holds
/// its devices' memory to the end frees it with this as it lets go, so
/// what it downloads then is not held beside memory no one will reuse.
void releaseCachedCpuBlocks();

} // namespace partita

#endif // PARTITA_RUNTIME_BACKEND_H
