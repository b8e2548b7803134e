//===- CommunicatorTest.cpp - Collectives against a reference -------------===//
//
// Every collective over every ordered subset of axes of 1-D to 3-D meshes
// (with device_ids permutations), one thread per device, distinct data on
// each device, checked element by element against a reference computed from
// the global picture: group membership by brute force over all devices, and
// each output element derived from the op description with index arithmetic.
//
//===----------------------------------------------------------------------===//
#include "CommunicatorTestSupport.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <functional>
#include <list>
#include <map>
#include <mutex>

using namespace partita;
using namespace partita::test;

namespace {

struct OpCase {
  CommunicatorOp kind = CommunicatorOp::AllReduce;
  ReductionCode reduction = ReductionCode::Sum;
  int64_t dim = 0, splitDim = 0, concatDim = 0;
  std::vector<SourceTargetPair> pairs;
  std::vector<int64_t> inputShape;
  bool inPlace = false;

  std::string name() const {
    std::string text = communicatorOpName(kind);
    text += " " + std::string(reductionCodeName(reduction)) + " dim " +
            std::to_string(dim) + " split " + std::to_string(splitDim) +
            " concat " + std::to_string(concatDim) + " in " +
            formatShape(inputShape) + (inPlace ? " in-place" : "");
    return text;
  }
};

/// The collectives each (mesh, axes) case runs back to back, for a group of
/// `n` devices: every kind, several dimensions and reductions, uneven
/// all_reduce slices, a scalar, in-place calls and permutes with holes.
std::vector<OpCase> opCasesFor(int64_t n) {
  std::vector<OpCase> cases;
  const std::vector<int64_t> base = {2, 3, 2};
  for (int64_t dim = 0; dim < 3; ++dim) {
    OpCase gather;
    gather.kind = CommunicatorOp::AllGather;
    gather.dim = dim;
    gather.inputShape = base;
    cases.push_back(gather);
  }
  auto reduce = [&](ReductionCode kind, std::vector<int64_t> shape,
                    bool inPlace) {
    OpCase op;
    op.kind = CommunicatorOp::AllReduce;
    op.reduction = kind;
    op.inputShape = std::move(shape);
    op.inPlace = inPlace;
    cases.push_back(op);
  };
  reduce(ReductionCode::Sum, {5, 3}, false);
  reduce(ReductionCode::Max, {7}, false);
  reduce(ReductionCode::Min, {}, false);
  reduce(ReductionCode::Sum, {3, 5}, true);
  const std::pair<int64_t, ReductionCode> scatters[] = {
      {0, ReductionCode::Sum},
      {1, ReductionCode::Max},
      {2, ReductionCode::Min}};
  for (auto [dim, kind] : scatters) {
    OpCase op;
    op.kind = CommunicatorOp::ReduceScatter;
    op.reduction = kind;
    op.dim = dim;
    op.inputShape = base;
    op.inputShape[dim] *= n;
    cases.push_back(op);
  }
  const std::pair<int64_t, int64_t> exchanges[] = {{0, 2}, {2, 0}, {1, 1}};
  for (auto [split, concat] : exchanges) {
    OpCase op;
    op.kind = CommunicatorOp::AllToAll;
    op.splitDim = split;
    op.concatDim = concat;
    op.inputShape = base;
    op.inputShape[split] *= n;
    cases.push_back(op);
  }
  OpCase shift, reverse, cycle;
  shift.kind = reverse.kind = cycle.kind = CommunicatorOp::CollectivePermute;
  for (int64_t i = 0; i + 1 < n; ++i)
    shift.pairs.push_back({i, i + 1}); // Position 0 receives zeros.
  for (int64_t i = 0; i < n; ++i) {
    reverse.pairs.push_back({i, n - 1 - i});
    cycle.pairs.push_back({i, (i + 1) % n});
  }
  shift.inputShape = {3, 2};
  reverse.inputShape = {4};
  cycle.inputShape = {2, 2};
  cycle.inPlace = true;
  cases.push_back(shift);
  cases.push_back(reverse);
  cases.push_back(cycle);
  return cases;
}

/// Device `device`'s element `k` of op `op`: exact in f32, distinct across
/// devices, elements and ops, and so are sums of up to eight of them.
double inputValue(int64_t device, size_t op, int64_t k) {
  return static_cast<double>(device * 1000 + k) + static_cast<double>(op) / 32;
}

std::vector<int64_t> referenceOutputShape(const OpCase &op, int64_t n) {
  std::vector<int64_t> shape = op.inputShape;
  switch (op.kind) {
  case CommunicatorOp::AllGather:
    shape[op.dim] *= n;
    break;
  case CommunicatorOp::ReduceScatter:
    shape[op.dim] /= n;
    break;
  case CommunicatorOp::AllToAll:
    shape[op.splitDim] /= n;
    shape[op.concatDim] *= n;
    break;
  default:
    break;
  }
  return shape;
}

double combine(ReductionCode kind, const std::vector<double> &values) {
  double result = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    if (kind == ReductionCode::Sum)
      result += values[i];
    else if (kind == ReductionCode::Max)
      result = std::max(result, values[i]);
    else
      result = std::min(result, values[i]);
  }
  return result;
}

/// Output element `flat` of op `opIndex` on the device at `position` of
/// `group`, from the op descriptions in PartitaCollectiveOps.td.
double referenceValue(const OpCase &op, size_t opIndex,
                      const ReferenceGroup &group, int64_t flat) {
  auto n = static_cast<int64_t>(group.members.size());
  std::vector<int64_t> outShape = referenceOutputShape(op, n);
  std::vector<int64_t> index = unflatten(flat, outShape);
  auto reduceAt = [&](int64_t k) {
    std::vector<double> values;
    for (int64_t member : group.members)
      values.push_back(inputValue(member, opIndex, k));
    return combine(op.reduction, values);
  };
  switch (op.kind) {
  case CommunicatorOp::AllGather: {
    int64_t source = index[op.dim] / op.inputShape[op.dim];
    index[op.dim] %= op.inputShape[op.dim];
    return inputValue(group.members[source], opIndex,
                      flatten(index, op.inputShape));
  }
  case CommunicatorOp::AllReduce:
    return reduceAt(flat);
  case CommunicatorOp::ReduceScatter:
    index[op.dim] += group.position * outShape[op.dim];
    return reduceAt(flatten(index, op.inputShape));
  case CommunicatorOp::AllToAll: {
    std::vector<int64_t> block = op.inputShape;
    block[op.splitDim] /= n;
    int64_t source = index[op.concatDim] / block[op.concatDim];
    index[op.concatDim] %= block[op.concatDim];
    index[op.splitDim] += group.position * block[op.splitDim];
    return inputValue(group.members[source], opIndex,
                      flatten(index, op.inputShape));
  }
  case CommunicatorOp::CollectivePermute:
    for (const SourceTargetPair &pair : op.pairs)
      if (pair.second == group.position)
        return inputValue(group.members[pair.first], opIndex, flat);
    return 0.0;
  }
  return -1.0;
}

/// Pointers the communicator cannot dereference: bit 62 set makes an x86-64
/// address non-canonical, so any load or store through it faults, while
/// offsets added to it survive the translation back.
constexpr uintptr_t handleBit = uintptr_t(1) << 62;
void *toHandle(const void *pointer) {
  return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(pointer) ^
                                  handleBit);
}
template <typename T> T *fromHandle(T *handle) {
  return reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(handle) ^
                               handleBit);
}

/// A CollectiveMemory like a GPU's: buffers are handles the communicator
/// must only forward, and nothing happens until complete(worker) — so a
/// communicator that reads another worker's output before that worker
/// completed, or that forgets to complete, gets wrong results here.
class DeferredHandleMemory final : public CollectiveMemory {
public:
  Status copyBox(int64_t worker, const void *src,
                 const std::vector<int64_t> &srcShape,
                 const std::vector<int64_t> &srcOffset, void *dst,
                 const std::vector<int64_t> &dstShape,
                 const std::vector<int64_t> &dstOffset,
                 const std::vector<int64_t> &box,
                 int64_t elementSize) override {
    return later(worker, [=] {
      copyTensorBox(fromHandle(src), srcShape, srcOffset, fromHandle(dst),
                    dstShape, dstOffset, box, elementSize);
      return Status::success();
    });
  }
  Status reduce(int64_t worker, ReductionCode kind, DType dtype,
                const std::vector<const void *> &inputs,
                int64_t inputRowStride, void *output, int64_t rows,
                int64_t count) override {
    std::vector<const void *> real;
    for (const void *input : inputs)
      real.push_back(fromHandle(input));
    return later(worker, [=] {
      return hostCollectiveMemory()->reduce(worker, kind, dtype, real,
                                            inputRowStride, fromHandle(output),
                                            rows, count);
    });
  }
  Status copy(int64_t worker, void *dst, const void *src,
              int64_t bytes) override {
    return later(worker, [=] {
      std::memcpy(fromHandle(dst), fromHandle(src), bytes);
      return Status::success();
    });
  }
  Status zero(int64_t worker, void *dst, int64_t bytes) override {
    return later(worker, [=] {
      std::memset(fromHandle(dst), 0, bytes);
      return Status::success();
    });
  }
  Expected<void *> temporary(int64_t, int64_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex);
    temporaries.emplace_back(std::max<int64_t>(bytes, 1));
    ++temporariesHeld;
    return toHandle(temporaries.back().data());
  }
  void releaseTemporary(int64_t, void *) override {
    std::lock_guard<std::mutex> lock(mutex);
    --temporariesHeld;
  }
  Status complete(int64_t worker) override {
    std::vector<std::function<Status()>> work;
    {
      std::lock_guard<std::mutex> lock(mutex);
      work.swap(pending[worker]);
    }
    Status result;
    for (auto &item : work)
      if (Status status = item(); result && !status)
        result = status;
    return result;
  }

  /// Work still queued (none once every call has returned).
  int64_t pendingCount() {
    std::lock_guard<std::mutex> lock(mutex);
    int64_t count = 0;
    for (auto &entry : pending)
      count += static_cast<int64_t>(entry.second.size());
    return count;
  }
  int64_t issued = 0, temporariesHeld = 0;

private:
  Status later(int64_t worker, std::function<Status()> work) {
    std::lock_guard<std::mutex> lock(mutex);
    pending[worker].push_back(std::move(work));
    ++issued;
    return Status::success();
  }
  std::mutex mutex;
  std::map<int64_t, std::vector<std::function<Status()>>> pending;
  std::list<std::vector<uint8_t>> temporaries;
};

/// Device `device`'s call of `op` on its buffers.
CollectiveCall callOf(int64_t device, const std::vector<std::string> &axes,
                      const OpCase &op, const HostArray &input,
                      HostArray &output, bool handles) {
  CollectiveCall call;
  call.kind = op.kind;
  call.deviceId = device;
  call.axes = axes;
  call.reduction = op.reduction;
  call.dim = op.dim;
  call.splitDim = op.splitDim;
  call.concatDim = op.concatDim;
  call.pairs = op.pairs;
  call.input = op.inPlace ? ConstBufferRef{output.bytes.data(), output.dtype,
                                           output.shape}
                          : inputRef(input);
  call.output = outputRef(output);
  if (handles) {
    call.input.data = toHandle(call.input.data);
    call.output.data = toHandle(call.output.data);
  }
  return call;
}

Mesh makeMesh(std::vector<MeshAxis> axes, std::vector<int64_t> ids = {}) {
  Expected<Mesh> mesh = Mesh::create(std::move(axes), std::move(ids));
  REQUIRE(mesh.ok());
  return *mesh;
}

} // namespace

TEST_CASE("every collective over every ordered axis subset matches the "
          "reference",
          "[runtime][communicator]") {
  std::vector<Mesh> meshes = {
      makeMesh({{"x", 8}}),
      makeMesh({{"x", 4}}, {2, 0, 3, 1}),
      makeMesh({{"data", 2}, {"model", 4}}, {7, 3, 5, 1, 6, 2, 4, 0}),
      makeMesh({{"a", 2}, {"b", 2}, {"c", 2}}, {5, 0, 6, 3, 1, 7, 2, 4}),
      makeMesh({{"a", 2}, {"b", 1}, {"c", 3}}),
  };
  // Single-threaded (the default for these sizes) and fully parallel.
  int64_t singleThreadedBytes =
      GENERATE(InProcessCommunicator::defaultSingleThreadedBytes, int64_t(0));
  // Host memory, or buffers behind handles whose work is deferred until the
  // worker completes (the shape of the CUDA backend's device memory).
  bool handles = GENERATE(false, true);
  // Called one by one, or all started before any is finished (with handle
  // memory, a start completes the call: only the device's thread may issue).
  bool asynchronous = GENERATE(false, true);
  for (const Mesh &mesh : meshes) {
    for (const std::vector<std::string> &axes : orderedAxisSubsets(mesh)) {
      INFO("mesh " << mesh.toString() << " axes " << formatAxes(axes)
                   << " single-threaded up to " << singleThreadedBytes
                   << " bytes" << (handles ? ", deferred handle memory" : "")
                   << (asynchronous ? ", started before finished" : ""));
      auto deferred = std::make_shared<DeferredHandleMemory>();
      InProcessCommunicator comm(
          mesh, std::chrono::seconds(20),
          handles ? std::shared_ptr<CollectiveMemory>(deferred)
                  : hostCollectiveMemory());
      comm.setSingleThreadedBytes(singleThreadedBytes);
      int64_t numDevices = mesh.numDevices();
      std::vector<ReferenceGroup> groups;
      for (int64_t device = 0; device < numDevices; ++device)
        groups.push_back(referenceGroup(mesh, device, axes));
      auto groupSize = static_cast<int64_t>(groups[0].members.size());
      std::vector<OpCase> ops = opCasesFor(groupSize);

      // inputs[device][op], outputs[device][op].
      std::vector<std::vector<HostArray>> inputs(numDevices),
          outputs(numDevices);
      for (int64_t device = 0; device < numDevices; ++device) {
        for (size_t op = 0; op < ops.size(); ++op) {
          std::vector<float> values;
          for (int64_t k = 0; k < countOf(ops[op].inputShape); ++k)
            values.push_back(static_cast<float>(inputValue(device, op, k)));
          inputs[device].push_back(
              HostArray::fromValues(DType::F32, ops[op].inputShape, values));
          HostArray output = HostArray::zeros(
              DType::F32, referenceOutputShape(ops[op], groupSize));
          if (ops[op].inPlace)
            output = inputs[device][op];
          else // Garbage, so that unwritten elements show.
            std::memset(output.bytes.data(), 0xab, output.bytes.size());
          outputs[device].push_back(output);
        }
      }

      std::vector<Status> statuses =
          runOnDevices(numDevices, [&](int64_t device) {
            std::vector<PendingCollective> started;
            for (size_t op = 0; op < ops.size(); ++op) {
              CollectiveCall call =
                  callOf(device, axes, ops[op], inputs[device][op],
                         outputs[device][op], handles);
              if (!asynchronous) {
                if (Status status = dispatchCollective(comm, call); !status)
                  return status;
                continue;
              }
              started.push_back(comm.startCollective(call));
              if (!started.back().status)
                return started.back().status;
            }
            for (PendingCollective &pending : started)
              if (Status status = comm.finishCollective(pending); !status)
                return status;
            return Status::success();
          });
      if (handles) {
        CHECK(deferred->issued > 0);
        CHECK(deferred->pendingCount() == 0);
        CHECK(deferred->temporariesHeld == 0);
      }
      for (int64_t device = 0; device < numDevices; ++device) {
        INFO("device " << device);
        REQUIRE(statuses[device].message() == "");
        for (size_t op = 0; op < ops.size(); ++op) {
          INFO("op #" << op << ": " << ops[op].name());
          const HostArray &output = outputs[device][op];
          int64_t mismatches = 0;
          std::string first;
          for (int64_t k = 0; k < output.numElements(); ++k) {
            auto expected = static_cast<float>(
                referenceValue(ops[op], op, groups[device], k));
            float actual = output.element<float>(k);
            if (actual != expected && mismatches++ == 0)
              first = "element " + std::to_string(k) + ": got " +
                      std::to_string(actual) + ", expected " +
                      std::to_string(expected);
          }
          INFO(first);
          CHECK(mismatches == 0);
        }
      }
    }
  }
}

TEST_CASE("collectives on different groups interleave without mixing",
          "[runtime][communicator]") {
  Mesh mesh = makeMesh({{"data", 2}, {"model", 4}}, {3, 1, 2, 0, 7, 5, 6, 4});
  InProcessCommunicator comm(mesh, std::chrono::seconds(20));
  comm.setSingleThreadedBytes(GENERATE(int64_t(1) << 20, int64_t(0)));
  constexpr int iterations = 30;
  // results[device][iteration] = {sum over data, sum over model, sum over
  // both}.
  std::vector<std::vector<std::array<int64_t, 3>>> results(
      8, std::vector<std::array<int64_t, 3>>(iterations));
  std::vector<Status> statuses = runOnDevices(8, [&](int64_t device) {
    for (int it = 0; it < iterations; ++it) {
      const std::vector<std::string> axesSets[] = {
          {"data"}, {"model"}, {"model", "data"}};
      for (int which = 0; which < 3; ++which) {
        int64_t value = device * 100 + it * 10000 + which;
        int64_t result = 0;
        if (Status status = comm.allReduce(
                device, axesSets[which], ReductionCode::Sum,
                {&value, DType::I64, {}}, {&result, DType::I64, {}});
            !status)
          return status;
        results[device][it][which] = result;
      }
    }
    return Status::success();
  });
  for (int64_t device = 0; device < 8; ++device) {
    REQUIRE(statuses[device].message() == "");
    const std::vector<std::string> axesSets[] = {
        {"data"}, {"model"}, {"model", "data"}};
    for (int it = 0; it < iterations; ++it)
      for (int which = 0; which < 3; ++which) {
        int64_t expected = 0;
        for (int64_t member :
             referenceGroup(mesh, device, axesSets[which]).members)
          expected += member * 100 + it * 10000 + which;
        CHECK(results[device][it][which] == expected);
      }
  }
}

TEST_CASE("all_slice keeps the block at the device's group position",
          "[runtime][communicator]") {
  Mesh mesh = makeMesh({{"a", 2}, {"b", 3}}, {5, 4, 3, 2, 1, 0});
  for (const std::vector<std::string> &axes : orderedAxisSubsets(mesh)) {
    for (int64_t device = 0; device < 6; ++device) {
      ReferenceGroup group = referenceGroup(mesh, device, axes);
      auto n = static_cast<int64_t>(group.members.size());
      std::vector<int32_t> values(4 * n * 2);
      for (size_t k = 0; k < values.size(); ++k)
        values[k] = static_cast<int32_t>(k);
      HostArray input = HostArray::fromValues(DType::I32, {4, n * 2}, values);
      HostArray output = HostArray::zeros(DType::I32, {4, 2});
      REQUIRE(
          allSlice(mesh, device, axes, 1, inputRef(input), outputRef(output))
              .ok());
      for (int64_t row = 0; row < 4; ++row)
        for (int64_t col = 0; col < 2; ++col)
          CHECK(output.element<int32_t>(row * 2 + col) ==
                row * n * 2 + group.position * 2 + col);
    }
  }
  HostArray input = HostArray::zeros(DType::I32, {3, 4});
  HostArray output = HostArray::zeros(DType::I32, {3, 2});
  Status status =
      allSlice(mesh, 0, {"b"}, 1, inputRef(input), outputRef(output));
  CHECK(status.message() ==
        "all_slice over mesh axes [b] on device 0: the group size 3 does not "
        "divide dimension 1 of the input shape [3, 4]");
}

TEST_CASE("host memory's copyToEach writes what one box copy per "
          "destination writes, streamed slabs included",
          "[runtime][communicator]") {
  // Each case: input shape, gather dimension, destinations. The first
  // three are large enough to stream in slabs: cut in the last dimension
  // (carrying into two before it), cut in the last of two with one row,
  // and whole rows with a partial last slab; the last stays below.
  struct Case {
    std::vector<int64_t> shape;
    int dim;
    int destinations;
  };
  std::vector<Case> cases = {{{3, 5, 90001}, 1, 2},
                             {{1, (int64_t(1) << 21) + 3}, 1, 3},
                             {{4099, 1024}, 0, 2},
                             {{7, 33}, 1, 4}};
  std::shared_ptr<CollectiveMemory> memory = hostCollectiveMemory();
  for (const Case &c : cases) {
    INFO("input " << formatShape(c.shape) << " along " << c.dim << " to "
                  << c.destinations);
    int64_t count = 1;
    for (int64_t extent : c.shape)
      count *= extent;
    std::vector<float> input(count);
    for (int64_t k = 0; k < count; ++k)
      input[k] = static_cast<float>(k % 100003) + 0.5f;
    std::vector<int64_t> dstShape = c.shape;
    dstShape[c.dim] *= 3; // The input goes to the middle block.
    std::vector<int64_t> offset(c.shape.size(), 0);
    offset[c.dim] = c.shape[c.dim];
    std::vector<std::vector<float>> got(c.destinations,
                                        std::vector<float>(count * 3, -1.0f));
    std::vector<float> want(count * 3, -1.0f);
    std::vector<void *> dsts;
    for (std::vector<float> &dst : got)
      dsts.push_back(dst.data());
    REQUIRE(memory
                ->copyToEach(0, input.data(), c.shape, dsts, dstShape, offset,
                             sizeof(float))
                .ok());
    copyTensorBox(input.data(), c.shape,
                  std::vector<int64_t>(c.shape.size(), 0), want.data(),
                  dstShape, offset, c.shape, sizeof(float));
    for (const std::vector<float> &dst : got)
      CHECK(std::memcmp(dst.data(), want.data(), want.size() * sizeof(float)) ==
            0);
  }
}

TEST_CASE("a large all_gather along an inner dimension is exact",
          "[runtime][communicator]") {
  // 2 devices, 8 MiB each along dimension 1: the results together (32 MiB)
  // are streamed, each input pushed to both outputs.
  Mesh mesh = makeMesh({{"x", 2}});
  InProcessCommunicator comm(mesh, std::chrono::seconds(20));
  const int64_t rows = 2, cols = int64_t(1) << 20;
  std::vector<std::vector<float>> inputs(2), outputs(2);
  for (int64_t d = 0; d < 2; ++d) {
    inputs[d].resize(rows * cols);
    for (int64_t k = 0; k < rows * cols; ++k)
      inputs[d][k] = static_cast<float>(d * 3 + k % 1001);
    outputs[d].assign(rows * cols * 2, -1.0f);
  }
  std::vector<Status> statuses = runOnDevices(2, [&](int64_t device) {
    return comm.allGather(
        device, {"x"}, 1, {inputs[device].data(), DType::F32, {rows, cols}},
        {outputs[device].data(), DType::F32, {rows, cols * 2}});
  });
  for (int64_t device = 0; device < 2; ++device) {
    REQUIRE(statuses[device].message() == "");
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols * 2; ++c) {
        int64_t from = c / cols;
        float want =
            static_cast<float>(from * 3 + (r * cols + c % cols) % 1001);
        wrong += outputs[device][r * cols * 2 + c] != want;
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("copyStreaming copies exactly the bytes asked for, at any "
          "alignment and length",
          "[runtime][communicator]") {
  // Guard bytes on both sides of the destination catch a write past either
  // end (the aligned head and tail around the streamed blocks).
  const size_t guard = 64;
  for (size_t length :
       {size_t(0), size_t(1), size_t(12), size_t(31), size_t(127), size_t(128),
        size_t(159), size_t(160), size_t(4099), size_t(65536 + 7)})
    for (size_t shift = 0; shift < 32; shift += 5) {
      INFO("length " << length << ", destination offset " << shift);
      std::vector<uint8_t> source(length + 32),
          target(length + 2 * guard + 32, 0xAB);
      for (size_t k = 0; k < source.size(); ++k)
        source[k] = static_cast<uint8_t>(k * 7 + 1);
      uint8_t *to = target.data() + guard + shift;
      copyStreaming(to, source.data() + (shift % 3), length);
      CHECK(std::memcmp(to, source.data() + (shift % 3), length) == 0);
      size_t clobbered = 0;
      for (uint8_t *p = target.data(); p < to; ++p)
        clobbered += *p != 0xAB;
      for (uint8_t *p = to + length; p < target.data() + target.size(); ++p)
        clobbered += *p != 0xAB;
      CHECK(clobbered == 0);
    }
}
