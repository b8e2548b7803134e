//===- Run.cpp - Running a compiled program -------------------------------===//
//
// A device runs the instruction stream in order: kernels for tensor ops,
// the communicator for collectives. runOnCpuDevices emulates the whole mesh
// with one thread per device (its inputs cut into device blocks and its
// outputs assembled by DeviceBlocks.cpp).
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Execution/Run.h"
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Communication/InProcessCommunicator.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Program/Backend.h"
#include "partita/Runtime/Program/RunMemory.h"
#include "partita/Sharding/Cost.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include <unistd.h>

using namespace partita;

namespace {

/// A collective started asynchronously and not yet waited for.
struct Flight {
  PendingCollective pending;
  std::chrono::steady_clock::time_point started;
  bool active = false;
};

/// A device's memory: one backend allocation per storage of the buffer
/// plan, and where each slot lives.
struct DeviceMemory {
  Backend &backend;
  std::vector<void *> storages;
  std::vector<uint8_t *> slots;
  Status status;
  /// Seconds in kernels, collectives in flight, and of the latter the part
  /// this device sat in a collective call instead of computing (exposed).
  double computing = 0, communicating = 0, exposed = 0;
  /// Where runInstructions records its spans, or null; the current trip of
  /// the innermost loop.
  DeviceTimeline *timeline = nullptr;
  int32_t trip = -1;
  /// Per instruction: a wait names it (start it asynchronously), and its
  /// flight while started; how many flights are active.
  std::vector<bool> startsAsync;
  std::vector<Flight> flights;
  int64_t activeFlights = 0;

  DeviceMemory(const Executable &program, Backend &backend) : backend(backend) {
    size_t count = program.slots.size();
    bool planned = program.slotOffsets.size() == count;
    std::vector<int64_t> sizes;
    if (planned)
      sizes.push_back(program.arenaBytes);
    else
      for (const TensorType &type : program.slots)
        sizes.push_back(type.bytes());
    for (int64_t bytes : sizes) {
      Expected<void *> memory = backend.allocate(std::max<int64_t>(bytes, 1));
      if (!memory) {
        status = memory.status();
        return;
      }
      storages.push_back(*memory);
    }
    for (size_t s = 0; s < count; ++s)
      slots.push_back(planned ? static_cast<uint8_t *>(storages[0]) +
                                    program.slotOffsets[s]
                              : static_cast<uint8_t *>(storages[s]));
    const std::vector<Instruction> &stream = program.instructions;
    startsAsync.assign(stream.size(), false);
    for (size_t i = 0; i < stream.size(); ++i)
      if (stream[i].op == OpCode::Wait && stream[i].ints.size() == 1 &&
          stream[i].ints[0] > 0 &&
          static_cast<uint64_t>(stream[i].ints[0]) <= i)
        startsAsync[i - stream[i].ints[0]] = true;
    flights.resize(stream.size());
  }
  ~DeviceMemory() {
    for (void *storage : storages)
      backend.release(storage);
  }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
};

/// The communicator's form of collective instruction `inst` (not
/// all_slice) for device `deviceId`.
Expected<CollectiveCall> collectiveCallOf(const Executable &program,
                                          const Instruction &inst,
                                          int64_t deviceId,
                                          DeviceMemory &memory) {
  CollectiveCall call;
  call.deviceId = deviceId;
  call.axes = collectiveAxes(inst);
  const TensorType &inType = program.slots[inst.operands[0]];
  const TensorType &outType = program.slots[inst.results[0]];
  call.input = {memory.slots[inst.operands[0]], inType.dtype, inType.shape};
  call.output = {memory.slots[inst.results[0]], outType.dtype, outType.shape};
  // Each collective op's communicator call and how many ints it needs.
  static const struct {
    OpCode op;
    CommunicatorOp kind;
    size_t needed;
  } forms[] = {
      {OpCode::AllGather, CommunicatorOp::AllGather, 1},
      {OpCode::AllReduce, CommunicatorOp::AllReduce, 1},
      {OpCode::ReduceScatter, CommunicatorOp::ReduceScatter, 2},
      {OpCode::AllToAll, CommunicatorOp::AllToAll, 2},
      {OpCode::CollectivePermute, CommunicatorOp::CollectivePermute, 0}};
  auto form = std::find_if(std::begin(forms), std::end(forms),
                           [&](const auto &f) { return f.op == inst.op; });
  if (form == std::end(forms))
    return Status::error(std::string(opCodeName(inst.op)) +
                         " is not a collective");
  call.kind = form->kind;
  size_t needed = form->needed;
  if (inst.op == OpCode::CollectivePermute)
    for (size_t i = 0; i + 1 < inst.ints.size(); i += 2)
      call.pairs.emplace_back(inst.ints[i], inst.ints[i + 1]);
  if (inst.ints.size() < needed)
    return Status::error(std::string(opCodeName(inst.op)) +
                         ": missing attributes");
  switch (call.kind) {
  case CommunicatorOp::AllGather:
    call.dim = inst.ints[0];
    break;
  case CommunicatorOp::AllReduce:
    call.reduction = static_cast<ReductionCode>(inst.ints[0]);
    break;
  case CommunicatorOp::ReduceScatter:
    call.reduction = static_cast<ReductionCode>(inst.ints[0]);
    call.dim = inst.ints[1];
    break;
  case CommunicatorOp::AllToAll:
    call.splitDim = inst.ints[0];
    call.concatDim = inst.ints[1];
    break;
  case CommunicatorOp::CollectivePermute:
    break;
  }
  return call;
}

double secondsBetween(std::chrono::steady_clock::time_point from,
                      std::chrono::steady_clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

/// Runs collective instruction `index`: all_slice locally; a collective a
/// wait names is started (finishWait() ends it); any other runs to
/// completion.
Status runCollective(const Executable &program, size_t index, int64_t deviceId,
                     Communicator *communicator, DeviceMemory &memory) {
  const Instruction &inst = program.instructions[index];
  if (inst.operands.size() != 1 || inst.results.size() != 1)
    return Status::error(std::string(opCodeName(inst.op)) +
                         ": a collective takes one operand and one result");
  auto started = std::chrono::steady_clock::now();
  if (inst.op == OpCode::AllSlice) {
    if (inst.ints.empty())
      return Status::error("all_slice: missing attributes");
    const TensorType &inType = program.slots[inst.operands[0]];
    const TensorType &outType = program.slots[inst.results[0]];
    Status status =
        allSlice(program.mesh, deviceId, collectiveAxes(inst), inst.ints[0],
                 {memory.slots[inst.operands[0]], inType.dtype, inType.shape},
                 {memory.slots[inst.results[0]], outType.dtype, outType.shape});
    memory.computing +=
        secondsBetween(started, std::chrono::steady_clock::now());
    return status;
  }
  if (!communicator)
    return Status::error(std::string(opCodeName(inst.op)) +
                         ": the program needs a communicator");
  Expected<CollectiveCall> call =
      collectiveCallOf(program, inst, deviceId, memory);
  if (!call)
    return call.status();
  if (!memory.startsAsync[index]) {
    Status status = dispatchCollective(*communicator, *call);
    double seconds = secondsBetween(started, std::chrono::steady_clock::now());
    memory.communicating += seconds;
    memory.exposed += seconds;
    return status;
  }
  Flight &flight = memory.flights[index];
  if (flight.active)
    return Status::error(std::string(opCodeName(inst.op)) + " (instruction " +
                         std::to_string(index) +
                         ") started again before its wait");
  flight.pending = communicator->startCollective(*call);
  flight.started = started;
  flight.active = true;
  ++memory.activeFlights;
  memory.exposed += secondsBetween(started, std::chrono::steady_clock::now());
  return flight.pending.status;
}

/// Waits for the collective started at instruction `index`.
Status finishFlight(Communicator *communicator, DeviceMemory &memory,
                    size_t index) {
  Flight &flight = memory.flights[index];
  if (!flight.active)
    return Status::error("wait: its collective (instruction " +
                         std::to_string(index) + ") was not started");
  auto entered = std::chrono::steady_clock::now();
  Status status = communicator->finishCollective(flight.pending);
  auto left = std::chrono::steady_clock::now();
  flight.active = false;
  --memory.activeFlights;
  memory.exposed += secondsBetween(entered, left);
  memory.communicating += secondsBetween(
      flight.started,
      std::min(left, std::max(flight.pending.completedAt, flight.started)));
  return status;
}

/// Records one instruction's span into the device's timeline (when it has
/// one) from construction to destruction, with the collective waits of
/// the calling thread in between.
class SpanRecorder {
public:
  SpanRecorder(DeviceMemory &memory, size_t instruction) : memory(memory) {
    if (!memory.timeline)
      return;
    span.instruction = static_cast<int32_t>(instruction);
    span.trip = memory.trip;
    waitedBefore = threadCollectiveWaitSeconds();
    span.startNanos = nowNanos();
  }
  ~SpanRecorder() {
    if (!memory.timeline)
      return;
    span.nanos = nowNanos() - span.startNanos;
    span.waitedNanos = static_cast<int64_t>(
        (threadCollectiveWaitSeconds() - waitedBefore) * 1e9);
    memory.timeline->spans.push_back(span);
  }
  SpanRecorder(const SpanRecorder &) = delete;
  SpanRecorder &operator=(const SpanRecorder &) = delete;

private:
  static int64_t nowNanos() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  DeviceMemory &memory;
  InstructionSpan span;
  double waitedBefore = 0;
};

Status runInstructions(const Executable &program, size_t begin, size_t end,
                       int64_t deviceId, Communicator *communicator,
                       DeviceMemory &memory);

/// The body of runInstructions().
Status runStretch(const Executable &program, size_t begin, size_t end,
                  int64_t deviceId, Communicator *communicator,
                  DeviceMemory &memory) {
  auto bytesOf = [&](int64_t slot) {
    return static_cast<size_t>(program.slots[slot].bytes());
  };
  Backend &backend = memory.backend;
  auto copySlot = [&](int64_t from, int64_t to) {
    return backend.copyOnDevice(memory.slots[to], memory.slots[from],
                                static_cast<int64_t>(bytesOf(to)));
  };
  for (size_t index = begin; index < end; ++index) {
    const Instruction &inst = program.instructions[index];
    if (inst.op == OpCode::Loop) {
      size_t carriedCount = inst.operands.size();
      if (Status valid = checkLoopInstruction(program, inst, index, end);
          !valid.ok())
        return valid;
      int64_t trips = inst.ints[0];
      size_t bodyBegin = index + 1, bodyEnd = bodyBegin + inst.ints[1];
      auto carried = [&](size_t i) { return inst.ints[3 + i]; };
      auto yielded = [&](size_t i) { return inst.ints[3 + carriedCount + i]; };
      auto copied = [&](size_t i) {
        return inst.ints[3 + 2 * carriedCount + i];
      };
      SpanRecorder loopSpan(memory, index);
      for (size_t i = 0; i < carriedCount; ++i)
        if (Status status = copySlot(inst.operands[i], carried(i));
            !status.ok())
          return status;
      int32_t outerTrip = memory.trip;
      for (int64_t trip = 0; trip < trips; ++trip) {
        memory.trip = static_cast<int32_t>(trip);
        int32_t value = static_cast<int32_t>(trip);
        if (Status status = backend.copyToDevice(memory.slots[inst.ints[2]],
                                                 &value, sizeof(value));
            !status.ok())
          return status;
        Status status = runInstructions(program, bodyBegin, bodyEnd, deviceId,
                                        communicator, memory);
        for (size_t i = 0; i < carriedCount && status.ok(); ++i)
          status = copySlot(yielded(i), copied(i));
        for (size_t i = 0; i < carriedCount && status.ok(); ++i)
          status = copySlot(copied(i), carried(i));
        if (!status.ok())
          return status;
      }
      memory.trip = outerTrip;
      for (size_t i = 0; i < carriedCount; ++i)
        if (Status status = copySlot(carried(i), inst.results[i]); !status.ok())
          return status;
      index = bodyEnd - 1;
      continue;
    }
    Status status;
    SpanRecorder span(memory, index);
    auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           started)
          .count();
    };
    if (isCollective(inst.op)) {
      status = runCollective(program, index, deviceId, communicator, memory);
    } else if (inst.op == OpCode::Wait) {
      if (inst.ints.size() != 1 || inst.ints[0] <= 0 ||
          static_cast<uint64_t>(inst.ints[0]) > index - begin)
        return Status::error("wait: malformed instruction");
      status = finishFlight(communicator, memory, index - inst.ints[0]);
    } else {
      std::vector<TensorType> operandTypes, resultTypes;
      std::vector<const void *> operands;
      std::vector<void *> results;
      for (int32_t slot : inst.operands) {
        operandTypes.push_back(program.slots[slot]);
        operands.push_back(memory.slots[slot]);
      }
      for (int32_t slot : inst.results) {
        resultTypes.push_back(program.slots[slot]);
        results.push_back(memory.slots[slot]);
      }
      status = backend.run(inst, operandTypes, operands, resultTypes, results,
                           program.constants);
      memory.computing += elapsed();
    }
    if (!status.ok())
      return status;
  }
  return Status::success();
}

/// Runs instructions [begin, end) of `program`, loops included. Every
/// collective started in the range is finished before it returns, after a
/// failure too (peers may be reading this device's buffers).
Status runInstructions(const Executable &program, size_t begin, size_t end,
                       int64_t deviceId, Communicator *communicator,
                       DeviceMemory &memory) {
  int64_t activeBefore = memory.activeFlights;
  Status status =
      runStretch(program, begin, end, deviceId, communicator, memory);
  if (memory.activeFlights == activeBefore)
    return status;
  for (size_t index = begin; index < end; ++index)
    if (memory.flights[index].active) {
      Status finished = finishFlight(communicator, memory, index);
      if (status.ok())
        status =
            finished.ok()
                ? Status::error(
                      std::string(opCodeName(program.instructions[index].op)) +
                      " (instruction " + std::to_string(index) +
                      ") was started but no wait in its stretch ends it")
                : finished;
    }
  return status;
}

} // namespace

Status partita::runOnDevice(const Executable &program, int64_t deviceId,
                            Communicator *communicator,
                            const std::vector<HostArray> &inputs,
                            std::vector<HostArray> &outputs, Backend *backend) {
  return runOnDeviceRepeated(program, deviceId, communicator, inputs, outputs,
                             backend, 1, nullptr, nullptr, nullptr);
}

Status partita::runOnDeviceRepeated(
    const Executable &program, int64_t deviceId, Communicator *communicator,
    const std::vector<HostArray> &inputs, std::vector<HostArray> &outputs,
    Backend *backend, int repeats, std::vector<double> *stepSeconds,
    std::vector<StepTimes> *stepTimes, DeviceTimeline *timeline) {
  if (inputs.size() != program.inputs.size()) {
    Status failure =
        Status::error("device " + std::to_string(deviceId) + " got " +
                      std::to_string(inputs.size()) + " inputs for " +
                      std::to_string(program.inputs.size()));
    if (communicator)
      communicator->abort(failure);
    return failure;
  }
  return runOnDeviceFed(
      program, deviceId, communicator,
      [&](size_t index, HostArray &, void *) -> Expected<const HostArray *> {
        return &inputs[index];
      },
      outputs, backend, repeats, stepSeconds, stepTimes, timeline);
}

Status partita::runOnDeviceFed(
    const Executable &program, int64_t deviceId, Communicator *communicator,
    const DeviceInputFeed &feed, std::vector<HostArray> &outputs,
    Backend *backend, int repeats, std::vector<double> *stepSeconds,
    std::vector<StepTimes> *stepTimes, DeviceTimeline *timeline) {
  std::unique_ptr<Backend> cpu;
  if (!backend) {
    cpu = createCpuBackend();
    backend = cpu.get();
  }
  auto fail = [&](Status status) {
    if (communicator)
      communicator->abort(status);
    return status;
  };
  DeviceMemory memory(program, *backend);
  if (!memory.status.ok())
    return fail(Status::error("device " + std::to_string(deviceId) + ": " +
                              memory.status.message()));
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    // A block the feed makes lives only until it is on the device.
    HostArray made;
    uint8_t *buffer = memory.slots[program.inputs[i].slot];
    Expected<const HostArray *> input =
        feed(i, made, backend->hostAddressable() ? buffer : nullptr);
    if (!input)
      return fail(input.status());
    if (!*input)
      continue; // Written in place.
    const HostArray &block = **input;
    const TensorType &slot = program.slots[program.inputs[i].slot];
    if (block.dtype != slot.dtype || block.shape != slot.shape)
      return fail(Status::error(
          "input " + std::to_string(i) + " (" + program.inputs[i].name +
          ") has the wrong type on device " + std::to_string(deviceId)));
    if (Status status = backend->copyToDevice(
            memory.slots[program.inputs[i].slot], block.bytes.data(),
            static_cast<int64_t>(block.bytes.size()));
        !status.ok())
      return fail(status);
  }
  if (timeline) {
    timeline->device = deviceId;
    timeline->spans.clear();
  }
  for (int repeat = 0; repeat < std::max(repeats, 1); ++repeat) {
    memory.timeline = repeat + 1 >= repeats ? timeline : nullptr;
    auto start = std::chrono::steady_clock::now();
    StepTimes before{memory.computing, memory.communicating,
                     threadCollectiveWaitSeconds(), memory.exposed};
    if (Status status = runInstructions(program, 0, program.instructions.size(),
                                        deviceId, communicator, memory);
        !status.ok() || !(status = backend->synchronize()).ok())
      return fail(Status::error("device " + std::to_string(deviceId) + ": " +
                                status.message()));
    if (stepSeconds)
      stepSeconds->push_back(std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count());
    if (stepTimes)
      stepTimes->push_back({memory.computing - before.computing,
                            memory.communicating - before.communicating,
                            threadCollectiveWaitSeconds() - before.waiting,
                            memory.exposed - before.exposed});
  }
  outputs.clear();
  for (const ExecutableValue &output : program.outputs) {
    const TensorType &type = program.slots[output.slot];
    HostArray array = HostArray::zeros(type.dtype, type.shape);
    if (Status status =
            backend->copyToHost(array.bytes.data(), memory.slots[output.slot],
                                static_cast<int64_t>(array.bytes.size()));
        !status.ok())
      return fail(status);
    outputs.push_back(std::move(array));
  }
  return Status::success();
}

/// The first failure that is not merely an abort another device caused,
/// else the first failure, else success.
static Status firstDeviceFailure(const std::vector<Status> &statuses) {
  // The first device to fail aborted the communicator; its message says
  // why, the others only that they were aborted.
  for (const Status &status : statuses)
    if (!status.ok() &&
        status.message().find("was aborted") == std::string::npos)
      return status;
  for (const Status &status : statuses)
    if (!status.ok())
      return status;
  return Status::success();
}

Status partita::runDevicesAsThreads(
    const Executable &program, const std::vector<int64_t> &devices,
    Communicator *communicator,
    const std::vector<std::vector<HostArray>> &inputsByDevice,
    std::vector<std::vector<HostArray>> &outputsByDevice,
    RunStatistics *statistics, const BackendFactory &makeBackend) {
  for (int64_t d : devices)
    if (inputsByDevice[d].size() != program.inputs.size())
      return Status::error("device " + std::to_string(d) + " got " +
                           std::to_string(inputsByDevice[d].size()) +
                           " inputs for " +
                           std::to_string(program.inputs.size()));
  return runDevicesAsThreads(
      program, devices, communicator,
      [&](size_t index, int64_t device, HostArray &,
          void *) -> Expected<const HostArray *> {
        return &inputsByDevice[device][index];
      },
      outputsByDevice, statistics, makeBackend);
}

Status partita::runDevicesAsThreads(
    const Executable &program, const std::vector<int64_t> &devices,
    Communicator *communicator, const DevicesInputFeed &feed,
    std::vector<std::vector<HostArray>> &outputsByDevice,
    RunStatistics *statistics, const BackendFactory &makeBackend) {
  outputsByDevice.assign(program.mesh.numDevices(), {});
  std::vector<Status> statuses(devices.size());
  std::vector<int64_t> peaks(devices.size(), 0);
  bool record = statistics && statistics->recordTimelines;
  if (record)
    statistics->timelines.assign(devices.size(), DeviceTimeline());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < devices.size(); ++k)
    threads.emplace_back([&, k] {
      int64_t d = devices[k];
      Expected<std::unique_ptr<Backend>> backend =
          makeBackend ? makeBackend(d)
                      : Expected<std::unique_ptr<Backend>>(createCpuBackend());
      if (!backend) {
        communicator->abort(backend.status());
        statuses[k] = backend.status();
        return;
      }
      int repeats = statistics ? statistics->repeats : 1;
      statuses[k] = runOnDeviceFed(
          program, d, communicator,
          [&](size_t index, HostArray &made, void *into) {
            return feed(index, d, made, into);
          },
          outputsByDevice[d], backend->get(), repeats,
          statistics && k == 0 ? &statistics->stepSeconds : nullptr,
          statistics && k == 0 ? &statistics->stepTimes : nullptr,
          record ? &statistics->timelines[k] : nullptr);
      peaks[k] = (*backend)->peakBytes();
    });
  for (std::thread &thread : threads)
    thread.join();
  if (statistics && !peaks.empty())
    statistics->peakBytesPerDevice =
        *std::max_element(peaks.begin(), peaks.end());
  return firstDeviceFailure(statuses);
}

namespace {

/// The caller's thread and the device threads of a stepwise run, in lock
/// step: the caller opens a step, every device runs it and reports, the
/// caller reads the results and opens the next (or ends the run).
struct StepGate {
  std::mutex mutex;
  std::condition_variable changed;
  int64_t open = -1;  // The step the devices may run.
  bool ended = false; // No more steps: download and leave.
  int64_t reported = 0;
  int64_t ready = 0;

  void waitFor(int64_t count, int64_t StepGate::*counter) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return this->*counter >= count; });
  }
  void add(int64_t StepGate::*counter) {
    std::lock_guard<std::mutex> lock(mutex);
    ++(this->*counter);
    changed.notify_all();
  }
};

} // namespace

namespace {

/// The host's side of a stepwise run: each step, the uploads `run.before`
/// asks for, the devices let go, their outputs handed to `run.after`;
/// the first failure ends it.
Status
driveSteps(StepwiseRun &run, StepGate &gate, int64_t devices,
           const std::vector<Status> &statuses,
           std::vector<std::vector<std::pair<size_t, HostArray>>> &uploads,
           std::vector<std::vector<HostArray>> &stepOutputs) {
  Status result = Status::success();
  gate.waitFor(devices, &StepGate::ready);
  // Every device has its inputs and has let its blocks go: their pages go
  // back to the system now, not while the arenas fill (jemalloc kept them
  // for its 10 s decay: GPT-2 medium's FSDP step peaked 0.79 GiB above its
  // plan).
  releaseFreedMemory();
  for (int64_t step = 0; step < run.steps; ++step) {
    result = firstDeviceFailure(statuses);
    if (!result.ok())
      break;
    for (auto &device : uploads)
      device.clear();
    if (run.before)
      result = run.before(step, uploads);
    if (!result.ok())
      break;
    {
      std::lock_guard<std::mutex> lock(gate.mutex);
      gate.open = step;
      gate.changed.notify_all();
    }
    gate.waitFor(devices * (step + 1), &StepGate::reported);
    result = firstDeviceFailure(statuses);
    if (result.ok() && run.after)
      result = run.after(step, stepOutputs);
    if (!result.ok() || run.stopped)
      break;
  }
  return result;
}

} // namespace

namespace {

/// The devices a stepwise run drives: run.devices, else the whole mesh.
Expected<std::vector<int64_t>> stepwiseDevices(const StepwiseRun &run,
                                               int64_t devices) {
  std::vector<int64_t> ran = run.devices;
  if (ran.empty())
    for (int64_t d = 0; d < devices; ++d)
      ran.push_back(d);
  for (int64_t d : ran)
    if (d < 0 || d >= devices)
      return Status::error("stepwise run: no device " + std::to_string(d) +
                           " in a mesh of " + std::to_string(devices));
  return ran;
}

} // namespace

namespace {

/// Copies each carried output into its input's buffer. An output may sit in
/// another donated input's storage (the buffer plan writes an output into
/// the first dead donated input of its layout, not necessarily its own), so
/// a copy waits until no copy still to be made reads the bytes it writes;
/// where the copies wait on each other in a cycle, one source goes through
/// the host first.
Status copyCarried(const Executable &program,
                   const std::vector<std::pair<size_t, size_t>> &carried,
                   DeviceMemory &memory, Backend &backend) {
  struct Copy {
    const uint8_t *from;
    uint8_t *to;
    int64_t bytes;
    bool fromHost = false;
  };
  std::vector<Copy> pending;
  for (auto [output, input] : carried) {
    int32_t from = program.outputs[output].slot;
    int32_t to = program.inputs[input].slot;
    if (memory.slots[from] != memory.slots[to])
      pending.push_back({static_cast<const uint8_t *>(memory.slots[from]),
                         static_cast<uint8_t *>(memory.slots[to]),
                         program.slots[to].bytes(), false});
  }
  auto overlaps = [](const uint8_t *a, int64_t aBytes, const uint8_t *b,
                     int64_t bBytes) {
    return a < b + bBytes && b < a + aBytes;
  };
  std::vector<HostArray> parked;
  while (!pending.empty()) {
    size_t ready = pending.size();
    for (size_t k = 0; k < pending.size() && ready == pending.size(); ++k) {
      bool blocked = false;
      for (size_t j = 0; j < pending.size() && !blocked; ++j)
        blocked = j != k && !pending[j].fromHost &&
                  overlaps(pending[k].to, pending[k].bytes, pending[j].from,
                           pending[j].bytes);
      if (!blocked)
        ready = k;
    }
    if (ready == pending.size()) {
      // A cycle: the first source waits on the host.
      Copy &first = pending.front();
      parked.push_back(HostArray::zeros(DType::U8, {first.bytes}));
      if (Status copied = backend.copyToHost(parked.back().bytes.data(),
                                             first.from, first.bytes);
          !copied.ok())
        return copied;
      // Its source is on the host now: the copies that were waiting to
      // write over it can go, and it goes when its own target is free.
      first.from = parked.back().bytes.data();
      first.fromHost = true;
      continue;
    }
    const Copy &copy = pending[ready];
    if (Status copied =
            copy.fromHost
                ? backend.copyToDevice(copy.to, copy.from, copy.bytes)
                : backend.copyOnDevice(copy.to, copy.from, copy.bytes);
        !copied.ok())
      return copied;
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(ready));
  }
  return Status::success();
}

} // namespace

Status partita::runDevicesStepwise(
    const Executable &program,
    std::vector<std::vector<HostArray>> &&inputsByDevice, StepwiseRun &run) {
  int64_t devices = program.mesh.numDevices();
  if (static_cast<int64_t>(inputsByDevice.size()) != devices)
    return Status::error("stepwise run: inputs for " +
                         std::to_string(inputsByDevice.size()) +
                         " devices, the mesh has " + std::to_string(devices));
  Expected<std::vector<int64_t>> chosen = stepwiseDevices(run, devices);
  if (!chosen)
    return chosen.status();
  const std::vector<int64_t> &ran = *chosen;
  std::unique_ptr<InProcessCommunicator> inProcess;
  if (!run.communicator)
    inProcess = std::make_unique<InProcessCommunicator>(program.mesh);
  Communicator &communicator =
      run.communicator ? *run.communicator : *inProcess;
  StepGate gate;
  std::vector<Status> statuses(devices);
  std::vector<std::vector<std::pair<size_t, HostArray>>> uploads(devices);
  std::vector<std::vector<HostArray>> stepOutputs(devices);
  run.finalInputs.assign(devices, {});
  run.snapshots.assign(devices, {});
  run.timelines.assign(run.timelineStep >= 0 ? devices : 0, DeviceTimeline());
  for (int64_t d = 0; d < static_cast<int64_t>(run.timelines.size()); ++d)
    run.timelines[d].device = d;
  auto download = [&](DeviceMemory &memory, int32_t slot, HostArray &into) {
    const TensorType &type = program.slots[slot];
    into = HostArray::zeros(type.dtype, type.shape);
    return memory.backend.copyToHost(into.bytes.data(), memory.slots[slot],
                                     static_cast<int64_t>(into.bytes.size()));
  };

  // One device at a time downloads its final values and frees its memory.
  std::mutex releasing;
  std::vector<std::thread> threads;
  for (int64_t d : ran)
    threads.emplace_back([&, d] {
      std::unique_ptr<Backend> backend = createCpuBackend();
      auto held = std::make_unique<DeviceMemory>(program, *backend);
      DeviceMemory &memory = *held;
      Status &status = statuses[d];
      auto fail = [&](Status failure) {
        if (status.ok()) {
          status = Status::error("device " + std::to_string(d) + ": " +
                                 failure.message());
          communicator.abort(status);
        }
      };
      if (!memory.status.ok())
        fail(memory.status);
      std::vector<HostArray> &inputs = inputsByDevice[d];
      for (size_t i = 0; status.ok() && i < program.inputs.size(); ++i) {
        const TensorType &slot = program.slots[program.inputs[i].slot];
        if (i >= inputs.size() || inputs[i].dtype != slot.dtype ||
            inputs[i].shape != slot.shape)
          fail(Status::error("input " + std::to_string(i) +
                             " has the wrong type"));
        else if (Status copied = backend->copyToDevice(
                     memory.slots[program.inputs[i].slot],
                     inputs[i].bytes.data(),
                     static_cast<int64_t>(inputs[i].bytes.size()));
                 !copied.ok())
          fail(copied);
      }
      std::vector<HostArray>().swap(inputs);
      gate.add(&StepGate::ready);
      for (int64_t step = 0;; ++step) {
        {
          std::unique_lock<std::mutex> lock(gate.mutex);
          gate.changed.wait(lock,
                            [&] { return gate.ended || gate.open >= step; });
          if (gate.ended)
            break;
        }
        if (status.ok()) {
          for (auto &[index, block] : uploads[d]) {
            const ExecutableValue &input = program.inputs[index];
            if (Status copied = backend->copyToDevice(
                    memory.slots[input.slot], block.bytes.data(),
                    static_cast<int64_t>(block.bytes.size()));
                !copied.ok()) {
              fail(copied);
              break;
            }
          }
        }
        memory.timeline =
            step == run.timelineStep ? &run.timelines[d] : nullptr;
        if (status.ok())
          if (Status ran =
                  runInstructions(program, 0, program.instructions.size(), d,
                                  &communicator, memory);
              !ran.ok())
            fail(ran);
        // The outputs are read before the carried copies: an output may sit
        // in the bytes of a donated input it does not update, which a copy
        // then fills.
        stepOutputs[d].assign(run.readEachStep.size(), HostArray());
        for (size_t k = 0; status.ok() && k < run.readEachStep.size(); ++k)
          if (Status read =
                  download(memory, program.outputs[run.readEachStep[k]].slot,
                           stepOutputs[d][k]);
              !read.ok())
            fail(read);
        if (status.ok())
          if (Status copied =
                  copyCarried(program, run.carried, memory, *backend);
              !copied.ok())
            fail(copied);
        if (status.ok() && run.snapshotAfter && run.snapshotAfter(step)) {
          run.snapshots[d].assign(run.readAtEnd.size(), HostArray());
          for (size_t k = 0; status.ok() && k < run.readAtEnd.size(); ++k)
            if (Status read =
                    download(memory, program.inputs[run.readAtEnd[k]].slot,
                             run.snapshots[d][k]);
                !read.ok())
              fail(read);
        }
        gate.add(&StepGate::reported);
      }
      std::lock_guard<std::mutex> turn(releasing);
      run.finalInputs[d].assign(run.downloadAtEnd ? run.readAtEnd.size() : 0,
                                HostArray());
      for (size_t k = 0;
           status.ok() && run.downloadAtEnd && k < run.readAtEnd.size(); ++k)
        if (Status read =
                download(memory, program.inputs[run.readAtEnd[k]].slot,
                         run.finalInputs[d][k]);
            !read.ok())
          fail(read);
      held.reset();
      releaseCachedCpuBlocks();
    });

  Status result = driveSteps(run, gate, static_cast<int64_t>(ran.size()),
                             statuses, uploads, stepOutputs);
  {
    std::lock_guard<std::mutex> lock(gate.mutex);
    gate.ended = true;
    gate.changed.notify_all();
  }
  for (std::thread &thread : threads)
    thread.join();
  if (result.ok())
    result = firstDeviceFailure(statuses);
  return result;
}

Expected<std::vector<HostArray>>
partita::runOnCpuDevices(const Executable &program,
                         const std::vector<HostArray> &globalInputs,
                         RunStatistics *statistics, PartialInputs policy) {
  Expected<std::vector<std::vector<HostArray>>> deviceInputs =
      deviceInputBlocks(program, globalInputs, policy);
  if (!deviceInputs)
    return deviceInputs.status();
  InProcessCommunicator communicator(program.mesh);
  std::vector<int64_t> devices(program.mesh.numDevices());
  for (size_t d = 0; d < devices.size(); ++d)
    devices[d] = static_cast<int64_t>(d);
  std::vector<std::vector<HostArray>> deviceOutputs;
  if (Status status =
          runDevicesAsThreads(program, devices, &communicator, *deviceInputs,
                              deviceOutputs, statistics);
      !status.ok())
    return status;
  return assembleOutputs(program, deviceOutputs);
}

std::string partita::describeStepTimes(const std::vector<StepTimes> &steps,
                                       int64_t device) {
  if (steps.empty())
    return "";
  // Medians of the runs: kernels; collectives in flight; of those, the time
  // the device sat in collective calls instead of computing (exposed), and
  // of the calls the time spent waiting for other devices.
  auto median = [&](double StepTimes::*field) {
    std::vector<double> values;
    for (const StepTimes &times : steps)
      values.push_back(times.*field);
    std::sort(values.begin(), values.end());
    return values[values.size() / 2] * 1e3;
  };
  char text[256];
  std::snprintf(text, sizeof(text),
                "time per step on device %lld: computing %.3f ms, "
                "communicating %.3f ms, exposed %.3f ms (waiting for other "
                "devices %.3f ms)\n",
                static_cast<long long>(device), median(&StepTimes::computing),
                median(&StepTimes::communicating), median(&StepTimes::exposed),
                median(&StepTimes::waiting));
  return text;
}
