//===- InProcessCommunicator.cpp - Collectives between threads ------------===//
//
// One mutex guards the table of rendezvous slots; each slot has its own
// condition variable. Threads copy or reduce outside the lock. A waiting
// thread polls for a short while first when every device of the mesh can
// have a hardware thread (waking a sleeping thread takes tens of
// microseconds, the whole of a small collective), and sleeps otherwise (on
// a two-core machine eight polling devices would starve the one doing
// work).
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace partita {

using Clock = std::chrono::steady_clock;

namespace {

/// One collective of one group: what the first device asked for, every
/// member's buffers, and how far the group has got.
struct Slot {
  CollectiveCall request; // The first arrival's call; later ones must agree.
  std::vector<int64_t> members;
  uint64_t sequence = 0;
  std::vector<const uint8_t *> inputs;
  std::vector<uint8_t *> outputs;
  std::vector<bool> present;
  int64_t arrived = 0, computed = 0, finished = 0;
  bool inPlace = false;
  bool failed = false;
  bool singleThreaded = false; // One device computes every output.
  bool async = false;          // Started by startCollective().
  bool done = false;           // Single-threaded: all outputs are written.
  Status result;               // Single-threaded: the outcome for everyone.
  Clock::time_point doneAt;    // Asynchronous: when `done` was set.
  // Asynchronous: the work as jobs (one per step and group position, or one
  // for all of it when single-threaded), claimed in order by workers and by
  // devices waiting to finish; step-1 jobs wait for every step-0 job.
  int64_t jobs = 0, claimedJobs = 0, finishedJobs = 0;
  std::vector<void *> scratch;
  Status failure;
  Clock::time_point lastArrival;
  std::condition_variable changed;
};

/// What the communicator keeps (InProcessCommunicator::State is this).
struct CommunicatorState {
  Mesh mesh;
  std::shared_ptr<CollectiveMemory> memory;
  std::chrono::milliseconds timeout;
  int64_t singleThreadedBytes =
      InProcessCommunicator::defaultSingleThreadedBytes;
  mutable std::mutex mutex;
  /// Whether waits poll before they sleep: every device of the mesh can
  /// have a hardware thread of its own.
  bool poll = false;
  bool aborted = false;
  Status abortReason;
  /// Keyed by the group's sorted device set and the collective's index
  /// among the calls on that set.
  std::map<std::pair<std::vector<int64_t>, uint64_t>, std::shared_ptr<Slot>>
      slots;
  /// Per sorted device set, how many calls each device has made on it.
  std::map<std::vector<int64_t>, std::map<int64_t, uint64_t>> callCounts;

  /// Asynchronous collectives whose group has arrived, for the workers.
  std::mutex jobMutex;
  std::condition_variable jobReady;
  std::deque<std::shared_ptr<Slot>> jobs;
  std::vector<std::thread> workers;
  bool stopping = false;
};

/// How long a wait polls before it sleeps (when the state polls at all).
constexpr auto kPollWindow = std::chrono::microseconds(50);

/// A pause between two looks at a slot while polling, the lock released:
/// a yield, so that a thread with work to do (another device, another
/// process) gets the core first.
void pauseUnlocked(std::unique_lock<std::mutex> &lock) {
  lock.unlock();
  std::this_thread::yield();
  lock.lock();
}

/// Waits under `lock` until `ready()`, woken through `slot.changed`:
/// polling for up to kPollWindow first when `state.poll`.
template <typename Ready>
void waitOn(const CommunicatorState &state, std::unique_lock<std::mutex> &lock,
            Slot &slot, Ready ready) {
  if (state.poll && !ready()) {
    Clock::time_point until = Clock::now() + kPollWindow;
    do
      pauseUnlocked(lock);
    while (!ready() && Clock::now() < until);
  }
  slot.changed.wait(lock, ready);
}

} // namespace

struct InProcessCommunicator::State : CommunicatorState {};

namespace {

/// A device's arrival at its group's slot (arrive()).
struct Arrival {
  std::shared_ptr<Slot> slot;
  int64_t deviceId = 0;
  int64_t groupSize = 0;
  bool completesGroup = false;
  std::pair<std::vector<int64_t>, uint64_t> key;
};

/// What an asynchronous start hands to finishCollective().
struct AsyncTicket {
  Arrival arrival;
};

/// The words that start a device's error ("all_gather ... on device 3");
/// built only for an error, never per call.
std::string callPrefix(const CollectiveCall &call, int64_t deviceId) {
  return describeCollective(call) + " on device " + std::to_string(deviceId);
}

/// "group [0, 1] (call #4 on this group)", for errors.
std::string groupText(const Slot &slot) {
  return "group " + formatDeviceList(slot.members) + " (call #" +
         std::to_string(slot.sequence) + " on this group)";
}

} // namespace

InProcessCommunicator::InProcessCommunicator(
    Mesh mesh, std::chrono::milliseconds timeout,
    std::shared_ptr<CollectiveMemory> memory)
    : state(std::make_unique<State>()) {
  state->mesh = std::move(mesh);
  state->memory = memory ? std::move(memory) : hostCollectiveMemory();
  state->timeout = timeout;
  state->poll = state->mesh.numDevices() <=
                static_cast<int64_t>(std::thread::hardware_concurrency());
}

InProcessCommunicator::~InProcessCommunicator() {
  {
    std::lock_guard<std::mutex> lock(state->jobMutex);
    state->stopping = true;
  }
  state->jobReady.notify_all();
  // Workers leave once the queue is empty: every collective whose group
  // arrived is completed, since its devices may still be waiting on it.
  for (std::thread &worker : state->workers)
    worker.join();
}

const Mesh &InProcessCommunicator::mesh() const { return state->mesh; }

void InProcessCommunicator::setTimeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(state->mutex);
  state->timeout = timeout;
}

std::chrono::milliseconds InProcessCommunicator::timeout() const {
  std::lock_guard<std::mutex> lock(state->mutex);
  return state->timeout;
}

void InProcessCommunicator::abort(const Status &reason) {
  std::lock_guard<std::mutex> lock(state->mutex);
  if (state->aborted)
    return;
  state->aborted = true;
  state->abortReason =
      reason.ok() ? Status::error("abort() without a reason") : reason;
  for (auto &entry : state->slots)
    entry.second->changed.notify_all();
}

void InProcessCommunicator::setSingleThreadedBytes(int64_t bytes) {
  std::lock_guard<std::mutex> lock(state->mutex);
  state->singleThreadedBytes = bytes;
}

bool InProcessCommunicator::aborted() const {
  std::lock_guard<std::mutex> lock(state->mutex);
  return state->aborted;
}

namespace {

/// Fails `slot` for everyone waiting on it and everyone still to come.
void failSlot(Slot &slot, Status failure) {
  slot.failed = true;
  slot.failure = std::move(failure);
  slot.changed.notify_all();
}

/// This device's share of the work once the whole group has arrived,
/// issued on `memory` by the thread of device `worker`. For two-step
/// collectives `step` 0 computes and step 1 distributes; `scratch` carries
/// an in-place permute's copy of its source from one step to the next.
Status computeOutput(const Slot &slot, int64_t position, int step,
                     void *&scratch, CollectiveMemory &memory,
                     int64_t worker) {
  const CollectiveCall &request = slot.request;
  auto groupSize = static_cast<int64_t>(slot.members.size());
  const std::vector<int64_t> &inShape = request.input.shape;
  int64_t elementSize = dtypeSize(request.input.dtype);
  auto outShapeOr =
      collectiveResultShape(request.kind, inShape, groupSize, request.dim,
                            request.splitDim, request.concatDim);
  const std::vector<int64_t> &outShape = *outShapeOr;
  uint8_t *output = slot.outputs[position];
  std::vector<int64_t> zeros(inShape.size(), 0);

  switch (request.kind) {
  case CommunicatorOp::AllGather: {
    // Pushed: this position's input into its block of every output, so a
    // memory can read each input once (pulled, every device read every
    // input: group-size times the reads). Outputs are complete when every
    // member has finished, which is when any of them returns.
    std::vector<int64_t> dstOffset = zeros;
    dstOffset[request.dim] = position * inShape[request.dim];
    std::vector<void *> outputs(slot.outputs.begin(), slot.outputs.end());
    return memory.copyToEach(worker, slot.inputs[position], inShape, outputs,
                             outShape, dstOffset, elementSize);
  }
  case CommunicatorOp::AllReduce: {
    int64_t count = *checkedNumElements(inShape);
    int64_t begin = sliceStart(count, position, groupSize);
    int64_t end = sliceStart(count, position + 1, groupSize);
    if (step == 0) {
      if (end == begin)
        return Status::success();
      std::vector<const void *> inputs;
      for (const uint8_t *input : slot.inputs)
        inputs.push_back(input + begin * elementSize);
      return memory.reduce(worker, request.reduction, request.input.dtype,
                           inputs, 0, output + begin * elementSize, 1,
                           end - begin);
    }
    for (int64_t owner = 0; owner < groupSize; ++owner) {
      if (owner == position)
        continue;
      int64_t from = sliceStart(count, owner, groupSize);
      int64_t to = sliceStart(count, owner + 1, groupSize);
      if (to > from)
        if (Status status = memory.copy(
                worker, output + from * elementSize,
                slot.outputs[owner] + from * elementSize,
                (to - from) * elementSize);
            !status)
          return status;
    }
    return Status::success();
  }
  case CommunicatorOp::ReduceScatter: {
    // Views: input [outer, groupSize * block, inner], output [outer, block,
    // inner]; this device reduces its block of every outer row.
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < request.dim; ++d)
      outer *= inShape[d];
    for (size_t d = request.dim + 1; d < inShape.size(); ++d)
      inner *= inShape[d];
    int64_t block = outShape[request.dim] * inner;
    if (outer == 0 || block == 0)
      return Status::success();
    std::vector<const void *> inputs(groupSize);
    for (int64_t i = 0; i < groupSize; ++i)
      inputs[i] = slot.inputs[i] + position * block * elementSize;
    return memory.reduce(worker, request.reduction, request.input.dtype,
                         inputs, groupSize * block, output, outer, block);
  }
  case CommunicatorOp::AllToAll: {
    std::vector<int64_t> box = inShape;
    box[request.splitDim] /= groupSize;
    std::vector<int64_t> srcOffset = zeros, dstOffset = zeros;
    srcOffset[request.splitDim] = position * box[request.splitDim];
    for (int64_t i = 0; i < groupSize; ++i) {
      dstOffset[request.concatDim] = i * box[request.concatDim];
      if (Status status =
              memory.copyBox(worker, slot.inputs[i], inShape, srcOffset, output,
                             outShape, dstOffset, box, elementSize);
          !status)
        return status;
    }
    return Status::success();
  }
  case CommunicatorOp::CollectivePermute: {
    int64_t bytes = *checkedNumBytes(request.input.dtype, inShape);
    const uint8_t *source = nullptr;
    for (const SourceTargetPair &pair : request.pairs)
      if (pair.second == position)
        source = slot.inputs[pair.first];
    if (bytes == 0)
      return Status::success();
    // In place, a source's input is someone's output: read everything
    // first (step 0), write after the whole group has read (step 1).
    if (slot.inPlace && step == 0) {
      if (!source)
        return Status::success();
      Expected<void *> copy = memory.temporary(worker, bytes);
      if (!copy)
        return copy.status();
      scratch = *copy;
      return memory.copy(worker, scratch, source, bytes);
    }
    if (slot.inPlace)
      source = static_cast<const uint8_t *>(scratch);
    if (source)
      return memory.copy(worker, output, source, bytes);
    return memory.zero(worker, output, bytes);
  }
  }
  return Status::error("unknown collective kind");
}

/// computeOutput() followed by complete(): what others read of this step
/// is written when it returns. An in-place permute's temporary is released
/// after its last step.
Status computeStep(const Slot &slot, int64_t position, int step, int steps,
                   void *&scratch, CollectiveMemory &memory, int64_t worker) {
  Status result =
      computeOutput(slot, position, step, scratch, memory, worker);
  Status completed = memory.complete(worker);
  if (result)
    result = completed;
  if (scratch && (step + 1 == steps || !result)) {
    memory.releaseTemporary(worker, scratch);
    scratch = nullptr;
  }
  return result;
}

/// all_reduce, and collective_permute in place, read what others write.
bool needsTwoSteps(const Slot &slot) {
  return slot.request.kind == CommunicatorOp::AllReduce ||
         (slot.request.kind == CommunicatorOp::CollectivePermute &&
          slot.inPlace);
}

/// Whether the results of all devices together are at most `limit` bytes.
bool resultsFitIn(const Slot &slot, int64_t limit) {
  auto groupSize = static_cast<int64_t>(slot.members.size());
  Expected<int64_t> inputBytes =
      checkedNumBytes(slot.request.input.dtype, slot.request.input.shape);
  int64_t perDevice = *inputBytes;
  if (slot.request.kind == CommunicatorOp::AllGather)
    perDevice *= groupSize;
  return perDevice * groupSize <= limit;
}

/// Every device's output, on the calling thread (device `worker`).
Status computeAllOutputs(const Slot &slot, CollectiveMemory &memory,
                         int64_t worker) {
  auto groupSize = static_cast<int64_t>(slot.members.size());
  std::vector<void *> scratch(groupSize, nullptr);
  int steps = needsTwoSteps(slot) ? 2 : 1;
  Status result;
  for (int step = 0; step < steps; ++step)
    for (int64_t position = 0; position < groupSize; ++position)
      if (result)
        result = computeStep(slot, position, step, steps, scratch[position],
                             memory, worker);
  for (void *block : scratch)
    if (block)
      memory.releaseTemporary(worker, block);
  return result;
}

} // namespace

namespace {

/// Adds the time between its construction and destruction, less the time
/// the device spent working, to the thread's collective wait.
class WaitClock {
public:
  WaitClock() : entered(Clock::now()) {}
  ~WaitClock() {
    double total =
        std::chrono::duration<double>(Clock::now() - entered).count();
    threadCollectiveWaitSeconds() += std::max(0.0, total - working);
  }
  /// Runs `work`, counting it as work, not waiting.
  template <typename Work> auto work(Work &&body) {
    Clock::time_point start = Clock::now();
    auto result = body();
    working += std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  }

private:
  Clock::time_point entered;
  double working = 0;
};

} // namespace

namespace {

/// The first part of every call, under the lock: resolves the group,
/// checks the call, and records this device's buffers in its slot (a new
/// one for the first arrival). Fails the slot for everyone when the call
/// is malformed or disagrees with the first arrival's.
Status arrive(CommunicatorState &state, const CollectiveCall &call, bool async,
              Arrival &arrival) {
  auto prefix = [&] { return callPrefix(call, call.deviceId); };
  arrival.deviceId = call.deviceId;
  Expected<CollectiveGroup> group =
      resolveGroup(state.mesh, call.deviceId, call.axes);
  if (!group)
    return Status::error(prefix() + ": " + group.status().message());
  auto groupSize = static_cast<int64_t>(group->members.size());
  int64_t position = group->position;
  Status argumentError = checkCollectiveCall(call, groupSize);

  std::vector<int64_t> deviceSet = group->members;
  std::sort(deviceSet.begin(), deviceSet.end());
  if (state.aborted)
    return Status::error(prefix() + ": the communicator was aborted: " +
                         state.abortReason.message());
  uint64_t sequence = state.callCounts[deviceSet][call.deviceId]++;
  arrival.key = {deviceSet, sequence};
  std::shared_ptr<Slot> &entry = state.slots[arrival.key];
  if (!entry) {
    entry = std::make_shared<Slot>();
    entry->request = call;
    entry->members = group->members;
    entry->sequence = sequence;
    entry->inputs.assign(groupSize, nullptr);
    entry->outputs.assign(groupSize, nullptr);
    entry->present.assign(groupSize, false);
    entry->singleThreaded = resultsFitIn(*entry, state.singleThreadedBytes);
    entry->async = async;
  }
  std::shared_ptr<Slot> slot = entry;
  arrival.slot = slot;
  arrival.groupSize = groupSize;
  if (slot->failed)
    return slot->failure;
  if (!argumentError) {
    failSlot(*slot, Status::error(prefix() + ": " + argumentError.message() +
                                  "; failing " + groupText(*slot)));
    return slot->failure;
  }
  if (!sameCollective(slot->request, call) || slot->async != async) {
    auto how = [](const CollectiveCall &c, bool started) {
      return describeCollective(c) +
             (started ? " (asynchronously)" : " (synchronously)");
    };
    failSlot(*slot,
             Status::error("devices disagree on call #" +
                           std::to_string(sequence) + " of group " +
                           formatDeviceList(slot->members) + ": device " +
                           std::to_string(slot->request.deviceId) + " called " +
                           how(slot->request, slot->async) + " but device " +
                           std::to_string(call.deviceId) + " called " +
                           how(call, async)));
    return slot->failure;
  }
  slot->inputs[position] = static_cast<const uint8_t *>(call.input.data);
  slot->outputs[position] = static_cast<uint8_t *>(call.output.data);
  slot->present[position] = true;
  slot->inPlace |= call.input.data == call.output.data;
  arrival.completesGroup = ++slot->arrived == groupSize;
  // Waiters only care about the last arrival (and failures): waking them
  // for every arrival would cost O(n^2) context switches. The timeout
  // deadline moves with lastArrival; a waiter that wakes at the old
  // deadline sees the new one and sleeps again.
  slot->lastArrival = Clock::now();
  return Status::success();
}

/// Waits under `lock` until the whole group of `arrival` has arrived;
/// fails after the communicator's timeout without a new arrival (naming
/// the devices that never came), on a failed slot, or once aborted.
Status waitForGroup(CommunicatorState &state,
                    std::unique_lock<std::mutex> &lock,
                    const Arrival &arrival) {
  Slot &slot = *arrival.slot;
  int64_t groupSize = arrival.groupSize;
  Clock::time_point pollUntil = Clock::now() + kPollWindow;
  while (slot.arrived < groupSize) {
    if (slot.failed)
      return slot.failure;
    if (state.aborted)
      return Status::error(callPrefix(slot.request, arrival.deviceId) +
                           ": the communicator was aborted: " +
                           state.abortReason.message());
    Clock::time_point deadline = slot.lastArrival + state.timeout;
    if (Clock::now() >= deadline) {
      std::vector<int64_t> arrived, missing;
      for (int64_t i = 0; i < groupSize; ++i)
        (slot.present[i] ? arrived : missing).push_back(slot.members[i]);
      auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(state.timeout)
              .count();
      failSlot(slot,
               Status::error(
                   describeCollective(slot.request) + ": " +
                   groupText(slot) + " made no progress for " +
                   std::to_string(ms) + " ms; arrived: devices " +
                   formatDeviceList(arrived) + "; did not arrive: devices " +
                   formatDeviceList(missing)));
      return slot.failure;
    }
    if (state.poll && Clock::now() < pollUntil)
      pauseUnlocked(lock);
    else
      slot.changed.wait_until(lock, deadline);
  }
  return Status::success();
}

/// Runs jobs of the asynchronous collective `slot` on the calling thread
/// (issued as device `worker`) until none is left to claim, or, with
/// `untilDone`, until the collective is done (waiting while the remaining
/// jobs are others'). Called with `lock` held on the state's mutex.
void runJobs(CommunicatorState &state, std::unique_lock<std::mutex> &lock,
             Slot &slot, int64_t worker, bool untilDone,
             WaitClock *clock = nullptr) {
  auto groupSize = static_cast<int64_t>(slot.members.size());
  int steps = needsTwoSteps(slot) ? 2 : 1;
  while (!slot.done) {
    int64_t job = slot.claimedJobs;
    bool claimable = job < slot.jobs &&
                     (slot.singleThreaded || job < groupSize ||
                      slot.finishedJobs >= groupSize);
    if (!claimable) {
      if (!untilDone && slot.claimedJobs >= slot.jobs)
        return;
      slot.changed.wait(lock);
      continue;
    }
    ++slot.claimedJobs;
    lock.unlock();
    auto runJob = [&] {
      if (slot.singleThreaded)
        return computeAllOutputs(slot, *state.memory, worker);
      int64_t position = job % groupSize;
      return computeStep(slot, position, static_cast<int>(job / groupSize),
                         steps, slot.scratch[position], *state.memory, worker);
    };
    Status result = clock ? clock->work(runJob) : runJob();
    lock.lock();
    if (!result && slot.result)
      slot.result = std::move(result);
    ++slot.finishedJobs;
    if (slot.finishedJobs == slot.jobs) {
      // A failed step 0 leaves an in-place permute's temporaries behind.
      for (void *&block : slot.scratch)
        if (block) {
          state.memory->releaseTemporary(worker, block);
          block = nullptr;
        }
      slot.done = true;
      slot.doneAt = Clock::now();
      slot.changed.notify_all();
    } else if (slot.finishedJobs == groupSize && !slot.singleThreaded) {
      slot.changed.notify_all(); // Step 1 may start.
    }
  }
}

/// A worker of the asynchronous collectives: runs jobs of each collective
/// handed to it, until the communicator is destroyed and the queue is
/// empty.
void runWorker(CommunicatorState &state) {
  for (;;) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(state.jobMutex);
      state.jobReady.wait(lock,
                          [&] { return state.stopping || !state.jobs.empty(); });
      if (state.jobs.empty())
        return;
      slot = std::move(state.jobs.front());
      state.jobs.pop_front();
    }
    std::unique_lock<std::mutex> lock(state.mutex);
    runJobs(state, lock, *slot, slot->members.front(), false);
  }
}

} // namespace

PendingCollective
InProcessCommunicator::startCollective(const CollectiveCall &call) {
  if (!state->memory->anyThreadMayIssue())
    return Communicator::startCollective(call);
  auto ticket = std::make_shared<AsyncTicket>();
  PendingCollective pending;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    pending.status = arrive(*state, call, true, ticket->arrival);
    if (!pending.status)
      return pending;
    if (ticket->arrival.completesGroup) {
      state->slots.erase(ticket->arrival.key);
      Slot &slot = *ticket->arrival.slot;
      int64_t groupSize = ticket->arrival.groupSize;
      slot.jobs = slot.singleThreaded
                      ? 1
                      : groupSize * (needsTwoSteps(slot) ? 2 : 1);
      slot.scratch.assign(groupSize, nullptr);
      // Members already finishing may take jobs now.
      slot.changed.notify_all();
    }
  }
  if (ticket->arrival.completesGroup) {
    std::lock_guard<std::mutex> lock(state->jobMutex);
    if (state->workers.empty()) {
      unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      for (unsigned w = 0; w < std::min(cores, 4u); ++w)
        state->workers.emplace_back([this] { runWorker(*state); });
    }
    // Every worker may take part in a collective split into jobs.
    size_t copies =
        ticket->arrival.slot->jobs > 1 ? state->workers.size() : 1;
    for (size_t c = 0; c < copies; ++c)
      state->jobs.push_back(ticket->arrival.slot);
    state->jobReady.notify_all();
  }
  pending.state = std::move(ticket);
  return pending;
}

Status InProcessCommunicator::finishCollective(PendingCollective &pending) {
  if (!pending.state)
    return pending.status;
  auto ticket = std::static_pointer_cast<AsyncTicket>(pending.state);
  pending.state.reset();
  WaitClock waitClock;
  std::unique_lock<std::mutex> lock(state->mutex);
  Slot &slot = *ticket->arrival.slot;
  pending.status = waitForGroup(*state, lock, ticket->arrival);
  if (!pending.status)
    return pending.status;
  // Rather than sleep, do what is left of the work (the data is complete
  // the sooner).
  runJobs(*state, lock, slot, ticket->arrival.deviceId, true, &waitClock);
  pending.completedAt = slot.doneAt;
  pending.status = slot.result
                       ? Status::success()
                       : Status::error(
                             callPrefix(slot.request, ticket->arrival.deviceId) +
                             ": " + slot.result.message());
  return pending.status;
}

Status InProcessCommunicator::runCall(const CollectiveCall &call) {
  WaitClock waitClock;
  auto prefix = [&] { return callPrefix(call, call.deviceId); };
  Arrival arrival;
  std::unique_lock<std::mutex> lock(state->mutex);
  if (Status arrived = arrive(*state, call, false, arrival); !arrived)
    return arrived;
  std::shared_ptr<Slot> slot = arrival.slot;
  int64_t groupSize = arrival.groupSize;
  bool completesGroup = arrival.completesGroup;
  int64_t position = 0;
  while (slot->members[position] != call.deviceId)
    ++position;
  const std::vector<int64_t> &deviceSet = arrival.key.first;
  uint64_t sequence = arrival.key.second;
  if (Status complete = waitForGroup(*state, lock, arrival); !complete)
    return complete;

  // Everyone is here: from now on every member must finish, because the
  // others may read this device's buffers until the last one is done.
  if (slot->singleThreaded) {
    // Small results: waking every device for the parallel steps costs more
    // than the copies, so the device that completed the group does all the
    // work while the others sleep until it is done.
    if (completesGroup) {
      lock.unlock();
      Status result = waitClock.work([&] {
        return computeAllOutputs(*slot, *state->memory, call.deviceId);
      });
      lock.lock();
      slot->result = result;
      slot->done = true;
      slot->changed.notify_all();
      state->slots.erase({deviceSet, sequence});
    } else {
      waitOn(*state, lock, *slot, [&] { return slot->done; });
    }
    if (!slot->result)
      return Status::error(prefix() + ": " + slot->result.message());
    return Status::success();
  }
  if (completesGroup)
    slot->changed.notify_all();
  void *scratch = nullptr;
  int steps = needsTwoSteps(*slot) ? 2 : 1;
  CollectiveMemory &memory = *state->memory;
  lock.unlock();
  Status result = waitClock.work([&] {
    return computeStep(*slot, position, 0, steps, scratch, memory,
                       call.deviceId);
  });
  lock.lock();
  if (needsTwoSteps(*slot)) {
    if (++slot->computed == groupSize)
      slot->changed.notify_all();
    waitOn(*state, lock, *slot, [&] { return slot->computed == groupSize; });
    lock.unlock();
    Status second = result ? waitClock.work([&] {
      return computeStep(*slot, position, 1, steps, scratch, memory,
                         call.deviceId);
    })
                           : result;
    if (result)
      result = second;
    lock.lock();
  }
  if (++slot->finished == groupSize) {
    slot->changed.notify_all();
    state->slots.erase({deviceSet, sequence});
  }
  waitOn(*state, lock, *slot, [&] { return slot->finished == groupSize; });
  if (!result)
    return Status::error(prefix() + ": " + result.message());
  return Status::success();
}

} // namespace partita

namespace partita {

CollectiveMemory::~CollectiveMemory() = default;

bool CollectiveMemory::anyThreadMayIssue() const { return false; }

Status CollectiveMemory::copyToEach(int64_t worker, const void *src,
                                    const std::vector<int64_t> &shape,
                                    const std::vector<void *> &dsts,
                                    const std::vector<int64_t> &dstShape,
                                    const std::vector<int64_t> &dstOffset,
                                    int64_t elementSize) {
  std::vector<int64_t> zeros(shape.size(), 0);
  for (void *dst : dsts)
    if (Status status = copyBox(worker, src, shape, zeros, dst, dstShape,
                                dstOffset, shape, elementSize);
        !status)
      return status;
  return Status::success();
}

namespace {

/// The bytes of input a slab of copyToEach() reads before writing it to
/// every destination: well inside a core's L2, so the writes after the
/// first read it from there.
constexpr int64_t kSlabBytes = int64_t(256) << 10;
/// The group's all_gather results together from which copyToEach()
/// streams: the last-level cache of the machines measured (16 MiB; a 4 MiB
/// all_gather on 2 devices, streamed, ran at 0.65 of its cached speed).
constexpr int64_t kStreamingResultBytes = int64_t(16) << 20;

int64_t bytesOf(const std::vector<int64_t> &shape, int64_t elementSize) {
  int64_t bytes = elementSize;
  for (int64_t extent : shape)
    bytes *= extent;
  return bytes;
}

class HostCollectiveMemory final : public CollectiveMemory {
public:
  Status copyBox(int64_t, const void *src, const std::vector<int64_t> &srcShape,
                 const std::vector<int64_t> &srcOffset, void *dst,
                 const std::vector<int64_t> &dstShape,
                 const std::vector<int64_t> &dstOffset,
                 const std::vector<int64_t> &box,
                 int64_t elementSize) override {
    copyTensorBox(
        src, srcShape, srcOffset, dst, dstShape, dstOffset, box, elementSize,
        static_cast<size_t>(bytesOf(box, elementSize)) >= kStreamingCopyBytes);
    return Status::success();
  }
  Status copyToEach(int64_t worker, const void *src,
                    const std::vector<int64_t> &shape,
                    const std::vector<void *> &dsts,
                    const std::vector<int64_t> &dstShape,
                    const std::vector<int64_t> &dstOffset,
                    int64_t elementSize) override {
    int64_t bytes = bytesOf(shape, elementSize);
    // Streamed once the group's results together (each member pushes to
    // every output) outgrow a last-level cache; below, the caches hold
    // them for whoever reads them next.
    auto results = static_cast<int64_t>(dsts.size() * dsts.size()) * bytes;
    if (results < kStreamingResultBytes || dsts.size() < 2)
      return CollectiveMemory::copyToEach(worker, src, shape, dsts, dstShape,
                                          dstOffset, elementSize);
    // Slabs: the leading dimensions one index at a time down to `cut`, the
    // first whose trailing block fits a slab; `rows` indices of `cut` each.
    auto rank = static_cast<int>(shape.size());
    int cut = 0;
    int64_t trailing = bytes / shape[0];
    while (cut + 1 < rank && trailing > kSlabBytes)
      trailing /= shape[++cut];
    int64_t rows = std::clamp<int64_t>(
        kSlabBytes / std::max<int64_t>(trailing, 1), 1, shape[cut]);
    std::vector<int64_t> box = shape, at(rank, 0), offset = dstOffset;
    for (int d = 0; d < cut; ++d)
      box[d] = 1;
    while (true) {
      box[cut] = std::min(rows, shape[cut] - at[cut]);
      for (int d = 0; d <= cut; ++d)
        offset[d] = dstOffset[d] + at[d];
      for (void *dst : dsts)
        copyTensorBox(src, shape, at, dst, dstShape, offset, box, elementSize,
                      /*streaming=*/true);
      // The next slab: `rows` further along `cut`, carrying into the
      // dimensions before it.
      at[cut] += rows;
      int d = cut;
      while (d > 0 && at[d] >= shape[d]) {
        at[d] = 0;
        ++at[--d];
      }
      if (at[d] >= shape[d])
        return Status::success();
    }
  }
  Status reduce(int64_t, ReductionCode kind, DType dtype,
                const std::vector<const void *> &inputs,
                int64_t inputRowStride, void *output, int64_t rows,
                int64_t count) override {
    int64_t elementSize = dtypeSize(dtype);
    std::vector<const void *> row(inputs.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < inputs.size(); ++i)
        row[i] = static_cast<const uint8_t *>(inputs[i]) +
                 r * inputRowStride * elementSize;
      if (Status status = reduceElements(
              kind, dtype, row,
              static_cast<uint8_t *>(output) + r * count * elementSize, count);
          !status)
        return status;
    }
    return Status::success();
  }
  Status copy(int64_t, void *dst, const void *src, int64_t bytes) override {
    if (static_cast<size_t>(bytes) >= kStreamingCopyBytes)
      copyStreaming(dst, src, static_cast<size_t>(bytes));
    else
      std::memcpy(dst, src, bytes);
    return Status::success();
  }
  Status zero(int64_t, void *dst, int64_t bytes) override {
    std::memset(dst, 0, bytes);
    return Status::success();
  }
  Expected<void *> temporary(int64_t, int64_t bytes) override {
    void *block = std::malloc(std::max<int64_t>(bytes, 1));
    if (!block)
      return Status::error("out of host memory for a " +
                           std::to_string(bytes) + "-byte temporary");
    return block;
  }
  void releaseTemporary(int64_t, void *block) override { std::free(block); }
  Status complete(int64_t) override { return Status::success(); }
  bool anyThreadMayIssue() const override { return true; }
};

} // namespace

std::shared_ptr<CollectiveMemory> hostCollectiveMemory() {
  static std::shared_ptr<CollectiveMemory> memory =
      std::make_shared<HostCollectiveMemory>();
  return memory;
}

} // namespace partita
