//===- CudaCommunicatorTest.cpp - GPU collectives against the host's ------===//
//
// Every collective over every ordered axis set of a 2x4 mesh (row-major and
// permuted device ids), in f32, bf16, i32 and bool, in place where allowed,
// small (one worker computes the group) and large (every device computes its
// share): each communicator the CUDA backend uses — the device-memory one
// for logical devices on a GPU, the staging one, NCCL when there are eight
// GPUs — runs on device buffers, and its outputs are compared with the
// in-process communicator on host copies of the same inputs (the
// reference). The device-memory communicator combines in the reference's
// order, so it must match bit for bit; NCCL within RunSupport's tolerances.
// Exits 77 (CTest's skip) without a GPU.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/CUDA/CudaBackend.h"
#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/Execution/RunSupport.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

using namespace partita;

namespace {

/// One collective of the sequence every device runs, with its input shape.
struct OpCase {
  CollectiveCall call; // deviceId, buffers filled per device.
  bool inPlace = false;
};

std::vector<OpCase> opCases(const std::vector<std::string> &axes, int64_t n) {
  std::vector<OpCase> cases;
  auto add = [&](CommunicatorOp kind, DType dtype, std::vector<int64_t> shape,
                 auto edit) {
    OpCase op;
    op.call.kind = kind;
    op.call.axes = axes;
    op.call.input.dtype = op.call.output.dtype = dtype;
    op.call.input.shape = std::move(shape);
    edit(op);
    cases.push_back(op);
  };
  auto none = [](OpCase &) {};
  for (DType dtype : {DType::F32, DType::BF16, DType::I32, DType::Bool}) {
    add(CommunicatorOp::AllGather, dtype, {3, 5}, none);
    add(CommunicatorOp::AllGather, dtype, {3, 5},
        [](OpCase &op) { op.call.dim = 1; });
    ReductionCode sum =
        dtype == DType::Bool ? ReductionCode::Or : ReductionCode::Sum;
    add(CommunicatorOp::AllReduce, dtype, {7, 3},
        [&](OpCase &op) { op.call.reduction = sum; });
    add(CommunicatorOp::AllReduce, dtype, {5},
        [](OpCase &op) { op.call.reduction = ReductionCode::Max; });
    add(CommunicatorOp::AllReduce, dtype, {4, 4}, [&](OpCase &op) {
      op.call.reduction = ReductionCode::Min;
      op.inPlace = true;
    });
    add(CommunicatorOp::ReduceScatter, dtype, {2 * n, 3},
        [&](OpCase &op) { op.call.reduction = sum; });
    add(CommunicatorOp::ReduceScatter, dtype, {2, 3 * n, 2}, [&](OpCase &op) {
      op.call.reduction = sum;
      op.call.dim = 1;
    });
    add(CommunicatorOp::AllToAll, dtype, {2 * n, 3}, [](OpCase &op) {
      op.call.splitDim = 0;
      op.call.concatDim = 1;
    });
    add(CommunicatorOp::AllToAll, dtype, {3, 2 * n}, [](OpCase &op) {
      op.call.splitDim = 1;
      op.call.concatDim = 0;
    });
    add(CommunicatorOp::CollectivePermute, dtype, {4, 3}, [&](OpCase &op) {
      for (int64_t i = 0; i + 1 < n; ++i)
        op.call.pairs.push_back({i, i + 1}); // Position 0 gets zeros.
    });
    add(CommunicatorOp::CollectivePermute, dtype, {6}, [&](OpCase &op) {
      for (int64_t i = 0; i < n; ++i)
        op.call.pairs.push_back({i, (i + 1) % n});
      op.inPlace = true;
    });
  }
  // Large enough that every device computes its own share.
  add(CommunicatorOp::AllReduce, DType::F32, {1 << 18},
      [](OpCase &op) { op.call.reduction = ReductionCode::Sum; });
  add(CommunicatorOp::AllReduce, DType::BF16, {512, 520}, [](OpCase &op) {
    op.call.reduction = ReductionCode::Sum;
    op.inPlace = true;
  });
  add(CommunicatorOp::AllGather, DType::F32, {256, 130},
      [](OpCase &op) { op.call.dim = 1; });
  add(CommunicatorOp::ReduceScatter, DType::F32, {64, 520 * n},
      [](OpCase &op) {
        op.call.reduction = ReductionCode::Sum;
        op.call.dim = 1;
      });
  add(CommunicatorOp::AllToAll, DType::BF16, {128 * n, 300}, [](OpCase &op) {
    op.call.splitDim = 0;
    op.call.concatDim = 1;
  });
  for (OpCase &op : cases)
    op.call.output.shape =
        *collectiveResultShape(op.call.kind, op.call.input.shape, n,
                               op.call.dim, op.call.splitDim,
                               op.call.concatDim);
  return cases;
}

HostArray randomInput(DType dtype, const std::vector<int64_t> &shape,
                      std::mt19937 &random) {
  HostArray array = HostArray::zeros(dtype, shape);
  for (int64_t e = 0; e < array.numElements(); ++e) {
    uint8_t *at = array.bytes.data() + e * dtypeSize(dtype);
    float value = std::uniform_real_distribution<float>(-2, 2)(random);
    if (dtype == DType::F32) {
      std::memcpy(at, &value, 4);
    } else if (dtype == DType::BF16) {
      uint16_t bits = partita::floatToBFloat16(value);
      std::memcpy(at, &bits, 2);
    } else if (dtype == DType::I32) {
      auto v = static_cast<int32_t>(random() % 2001) - 1000;
      std::memcpy(at, &v, 4);
    } else {
      *at = random() % 2;
    }
  }
  return array;
}

std::vector<Status> onDeviceThreads(int64_t devices,
                                    const std::function<Status(int64_t)> &body) {
  std::vector<Status> statuses(devices);
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < devices; ++d)
    threads.emplace_back([&, d] { statuses[d] = body(d); });
  for (std::thread &thread : threads)
    thread.join();
  return statuses;
}

int failures = 0, passed = 0;

/// Runs every case of `axes` on `mesh` through the communicator `kind`
/// builds and compares with the in-process reference.
void checkCommunicator(const std::string &kind, const Mesh &mesh,
                       const std::vector<std::string> &axes, int gpus) {
  int64_t devices = mesh.numDevices();
  int64_t n = 1;
  for (const std::string &axis : axes)
    n *= mesh.axes()[mesh.axisIndex(axis)].size;
  std::vector<OpCase> cases = opCases(axes, n);
  std::mt19937 random(static_cast<unsigned>(n * 131 + axes.size()));
  // inputs[d][c]; the reference outputs want[d][c].
  std::vector<std::vector<HostArray>> inputs(devices), want(devices),
      got(devices);
  for (int64_t d = 0; d < devices; ++d)
    for (const OpCase &op : cases) {
      inputs[d].push_back(
          randomInput(op.call.input.dtype, op.call.input.shape, random));
      want[d].push_back(
          HostArray::zeros(op.call.output.dtype, op.call.output.shape));
      got[d].push_back(want[d].back());
    }
  InProcessCommunicator reference(mesh);
  std::vector<Status> statuses = onDeviceThreads(devices, [&](int64_t d) {
    for (size_t c = 0; c < cases.size(); ++c) {
      CollectiveCall call = cases[c].call;
      call.deviceId = d;
      HostArray in = inputs[d][c];
      if (cases[c].inPlace)
        want[d][c] = in;
      call.input.data = cases[c].inPlace ? want[d][c].bytes.data()
                                         : inputs[d][c].bytes.data();
      call.output.data = want[d][c].bytes.data();
      if (Status status = dispatchCollective(reference, call); !status)
        return status;
    }
    return Status::success();
  });
  for (const Status &status : statuses)
    if (!status) {
      std::printf("FAIL reference %s: %s\n", formatAxes(axes).c_str(),
                  status.message().c_str());
      ++failures;
      return;
    }

  std::unique_ptr<Communicator> communicator;
  if (kind == "device")
    communicator = createDeviceCommunicator(mesh);
  else if (kind == "staging")
    communicator = createStagingCommunicator(mesh);
  else {
    std::vector<int> gpuOf(devices);
    for (int64_t d = 0; d < devices; ++d)
      gpuOf[d] = static_cast<int>(d);
    Expected<std::unique_ptr<Communicator>> nccl =
        createNcclCommunicator(mesh, gpuOf);
    if (!nccl) {
      std::printf("FAIL nccl: %s\n", nccl.status().message().c_str());
      ++failures;
      return;
    }
    communicator = std::move(*nccl);
  }
  statuses = onDeviceThreads(devices, [&](int64_t d) -> Status {
    Expected<std::unique_ptr<Backend>> backend =
        createCudaBackend(kind == "nccl" ? static_cast<int>(d)
                                         : static_cast<int>(d % gpus));
    if (!backend) {
      communicator->abort(backend.status());
      return backend.status();
    }
    Backend &gpu = **backend;
    if (kind == "device")
      setDeviceCommunicatorStream(*communicator, d, cudaStreamOf(gpu));
    if (kind == "nccl")
      setNcclStream(*communicator, d, cudaStreamOf(gpu));
    for (size_t c = 0; c < cases.size(); ++c) {
      CollectiveCall call = cases[c].call;
      call.deviceId = d;
      const HostArray &in = inputs[d][c];
      Expected<void *> input = gpu.allocate(in.numBytes());
      Expected<void *> output = gpu.allocate(got[d][c].numBytes());
      if (!input || !output)
        return !input ? input.status() : output.status();
      void *target = cases[c].inPlace ? *input : *output;
      Status status = gpu.copyToDevice(*input, in.bytes.data(), in.numBytes());
      call.input.data = *input;
      call.output.data = target;
      if (status)
        status = dispatchCollective(*communicator, call);
      if (status)
        status = gpu.synchronize();
      if (status)
        status = gpu.copyToHost(got[d][c].bytes.data(), target,
                                got[d][c].numBytes());
      gpu.release(*input);
      gpu.release(*output);
      if (!status) {
        communicator->abort(status);
        return status;
      }
    }
    return Status::success();
  });
  for (int64_t d = 0; d < devices; ++d) {
    if (!statuses[d]) {
      std::printf("FAIL %s %s device %lld: %s\n", kind.c_str(),
                  formatAxes(axes).c_str(), static_cast<long long>(d),
                  statuses[d].message().c_str());
      ++failures;
      return;
    }
  }
  for (int64_t d = 0; d < devices; ++d)
    for (size_t c = 0; c < cases.size(); ++c) {
      CollectiveCall call = cases[c].call;
      bool same = got[d][c].bytes == want[d][c].bytes;
      bool ok = same;
      if (!same && kind == "nccl") // NCCL sums in its own order.
        ok = compareArrays(got[d][c], want[d][c]).within;
      if (!ok) {
        Comparison comparison = compareArrays(got[d][c], want[d][c]);
        std::printf("FAIL %s device %lld %s%s: %s\n", kind.c_str(),
                    static_cast<long long>(d),
                    describeCollective(call).c_str(),
                    cases[c].inPlace ? " in place" : "",
                    describeComparison("output", comparison).c_str());
        ++failures;
      } else {
        ++passed;
      }
    }
}

} // namespace

int main() {
  std::string why;
  int gpus = cudaDeviceCount(&why);
  if (gpus == 0) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  std::vector<Mesh> meshes = {
      *Mesh::create({{"data", 2}, {"model", 4}}),
      *Mesh::create({{"data", 2}, {"model", 4}}, {7, 3, 5, 1, 6, 2, 4, 0})};
  const std::vector<std::vector<std::string>> axisSets = {
      {"data"}, {"model"}, {"data", "model"}, {"model", "data"}};
  std::vector<std::string> kinds = {"device", "staging"};
  if (gpus >= 8)
    kinds.push_back("nccl");
  else
    std::printf("nccl: skipped (%d GPU%s; it needs 8)\n", gpus,
                gpus == 1 ? "" : "s");
  for (const std::string &kind : kinds)
    for (const Mesh &mesh : meshes)
      for (const std::vector<std::string> &axes : axisSets)
        checkCommunicator(kind, mesh, axes, gpus);
  std::printf("cuda communicators: %d outputs agree with the in-process "
              "communicator, %d fail\n",
              passed, failures);
  return failures == 0 ? 0 : 1;
}
