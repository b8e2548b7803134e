//===- MpiCommunicator.cpp - Collectives across processes -----------------===//
//
// A group whose devices all live in this process goes to the in-process
// communicator unchanged. A group that spans processes meets in two steps:
//
//  1. its local members rendezvous in this process (as in the in-process
//     communicator); the last to arrive becomes the process's leader;
//  2. the leader exchanges one message with every other process of the
//     group, on the MPI communicator of that process set, tagged by the
//     group (groups sharing a process set get distinct tags), and writes
//     every local member's output.
//
// What a process sends depends on the collective: for reductions the
// reduction of its members' inputs (so the bytes on the wire do not grow
// with the devices per process); for all_gather its members' inputs; for
// all_to_all only the blocks the receiving process's members need; for
// collective_permute only the inputs whose targets live there. Every
// process then combines the same messages in rank order, so all replicas
// get identical bits. Each message starts with a header (the call's
// sequence number on its group and a hash of its description), so two
// processes that disagree on the program get an error, not wrong numbers.
//
// Waiting polls with sleeps (MpiInternal.h). A call that makes no progress
// for the timeout fails naming the ranks and devices that did not send;
// waits inside the process get twice that, so that the cross-process
// failure, which names the culprit, is the one reported.
//
//===----------------------------------------------------------------------===//
#include "MpiInternal.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

namespace partita {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t headerMagic = 0x5041525449544131ULL; // "PARTITA1"

struct MessageHeader {
  uint64_t magic;
  uint64_t sequence;
  uint64_t signature;
  uint64_t payloadBytes;
};

uint64_t fnv1a(const std::string &text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text)
    hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

/// Message buffers of one group, kept from call to call: a fresh
/// megabyte-sized buffer costs more in page faults than the copy into it.
/// Calls on one group never overlap (a call's leader starts only after
/// every local member has left the previous call), so one set suffices.
struct ChannelBuffers {
  std::vector<std::vector<uint8_t>> send, receive; // Per peer, header first.
  std::vector<uint8_t> reduced;
  /// reduce_scatter through MPI: this process's blocks.
  std::vector<uint8_t> scattered;
};

/// A cross-process group's channel: the process set's communicator and
/// the group's tag on it.
struct Channel {
  std::vector<int> processes; // Ascending world ranks.
  MPI_Comm comm = MPI_COMM_NULL;
  int tag = 0;
  /// The group's own communicator for MPI's collectives, which have no
  /// tags: groups of one process set run concurrently, from different
  /// threads. Null when the set has too many groups to give each one.
  MPI_Comm collectiveComm = MPI_COMM_NULL;
  std::shared_ptr<ChannelBuffers> buffers =
      std::make_shared<ChannelBuffers>();
};

/// One collective of a cross-process group, as seen by this process.
struct Slot {
  CollectiveCall request;
  std::vector<int64_t> members;
  std::vector<const uint8_t *> inputs; // By position; null for remote.
  std::vector<uint8_t *> outputs;
  std::vector<bool> present;
  int64_t arrived = 0;
  bool done = false;
  bool failed = false;
  Status result;
  Clock::time_point lastArrival;
  std::condition_variable changed;
};

struct Exchange;

/// Parses PARTITA_DEBUG_STOP=RANK:K (tests): RANK stops itself with
/// SIGSTOP as it starts its K-th cross-process exchange.
int64_t debugStopExchange(int rank) {
  const char *spec = std::getenv("PARTITA_DEBUG_STOP");
  if (!spec)
    return 0;
  int stopRank = -1;
  long long exchange = 0;
  if (std::sscanf(spec, "%d:%lld", &stopRank, &exchange) != 2 ||
      stopRank != rank)
    return 0;
  return exchange;
}

} // namespace

class MpiCommunicator final : public CallForwardingCommunicator {
public:
  MpiCommunicator(MpiProcess &process, Mesh mesh, ProcessLayout layout,
                  std::chrono::milliseconds timeout)
      : process(process), meshValue(std::move(mesh)),
        layout(std::move(layout)), timeout(timeout),
        local(meshValue, timeout * 2),
        stopAtExchange(debugStopExchange(process.rank())) {}

  ~MpiCommunicator() override {
    if (aborted)
      return; // Requests may be pending on these communicators.
    for (MPI_Comm &comm : duplicates)
      MPI_Comm_free(&comm);
    for (auto &entry : comms)
      if (entry.second != MPI_COMM_NULL)
        MPI_Comm_free(&entry.second);
  }

  /// Creates one communicator per process set (collective over all
  /// processes, in the same order everywhere).
  Status createChannels() {
    MpiProcess::Impl &mpi = process.impl();
    for (const std::vector<int> &set : crossProcessSets(meshValue, layout)) {
      bool member = std::binary_search(set.begin(), set.end(), mpi.rank);
      MPI_Comm comm = MPI_COMM_NULL;
      std::lock_guard<std::mutex> guard(mpi.lock);
      PARTITA_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD,
                                       member ? 0 : MPI_UNDEFINED, mpi.rank,
                                       &comm));
      if (member)
        comms[set] = comm;
    }
    // A process set with one group lends it its communicator; with up to
    // kMaxDuplicates groups each gets a duplicate (made in the same order
    // on every member); with more, their collectives stay point to point.
    constexpr int kMaxDuplicates = 64;
    auto groups = crossProcessGroups(meshValue, layout);
    std::map<std::vector<int>, int> groupsOfSet;
    for (const auto &group : groups)
      ++groupsOfSet[group.second];
    std::map<std::vector<int>, int> nextTag;
    for (const auto &[devices, processes] : groups) {
      int tag = nextTag[processes]++;
      if (!comms.count(processes))
        continue;
      Channel channel;
      channel.processes = processes;
      channel.comm = comms[processes];
      channel.tag = tag;
      int count = groupsOfSet[processes];
      if (count == 1) {
        channel.collectiveComm = channel.comm;
      } else if (count <= kMaxDuplicates) {
        std::lock_guard<std::mutex> guard(mpi.lock);
        PARTITA_MPI_CHECK(
            MPI_Comm_dup(channel.comm, &channel.collectiveComm));
        duplicates.push_back(channel.collectiveComm);
      }
      channels[devices] = channel;
    }
    return Status::success();
  }

  const Mesh &mesh() const override { return meshValue; }

  void abort(const Status &reason) override {
    {
      std::lock_guard<std::mutex> guard(mutex);
      if (!aborted) {
        aborted = true;
        abortReason =
            reason.ok() ? Status::error("abort() without a reason") : reason;
        for (auto &entry : slots)
          entry.second->changed.notify_all();
      }
    }
    local.abort(reason);
  }

private:
  Status runCall(const CollectiveCall &call) override;
  /// The leader's part of a cross-process call: messages to and from the
  /// group's other processes, then every local member's output.
  Status exchange(Slot &slot, Channel &channel, uint64_t sequence,
                  const std::string &groupText);
  /// Sends and receives the messages `x` planned (header first) and checks
  /// that every peer made the same call.
  Status transfer(Exchange &x, Channel &channel, uint64_t sequence,
                  uint64_t signature);
  /// The data of `x` through MPI's own collective on the channel's
  /// communicator (after the headers), polled like transfer().
  Status runMpiCollective(Exchange &x, Channel &channel);
  /// Polls `requests` to completion with the communicator's timeout,
  /// failing when it is aborted; after a failure the group's buffers are
  /// left to MPI and the group gets fresh ones.
  Status waitPolled(Exchange &x, Channel &channel,
                    std::vector<MPI_Request> &requests,
                    const StallDescription &stalled);
  std::string devicesOfRank(int rank) const {
    return formatDeviceList(layout.devicesOf(rank));
  }

  MpiProcess &process;
  Mesh meshValue;
  ProcessLayout layout;
  std::chrono::milliseconds timeout;
  InProcessCommunicator local;
  std::map<std::vector<int>, MPI_Comm> comms;
  std::vector<MPI_Comm> duplicates;
  std::map<std::vector<int64_t>, Channel> channels;

  std::mutex mutex;
  bool aborted = false;
  Status abortReason;
  std::map<std::pair<std::vector<int64_t>, uint64_t>, std::shared_ptr<Slot>>
      slots;
  std::map<std::vector<int64_t>, std::map<int64_t, uint64_t>> callCounts;
  /// Buffers of requests left pending by a failed exchange: MPI may still
  /// touch them, so they live as long as the communicator.
  std::vector<std::shared_ptr<ChannelBuffers>> abandoned;
  std::atomic<int64_t> exchanges{0};
  int64_t stopAtExchange = 0;
};

Status MpiCommunicator::runCall(const CollectiveCall &call) {
  auto prefix = [&]() {
    return describeCollective(call) + " on device " +
           std::to_string(call.deviceId);
  };
  Expected<CollectiveGroup> group =
      resolveGroup(meshValue, call.deviceId, call.axes);
  if (!group)
    return Status::error(prefix() + ": " + group.status().message());
  std::vector<int64_t> deviceSet = group->members;
  std::sort(deviceSet.begin(), deviceSet.end());
  auto channel = channels.find(deviceSet);
  if (channel == channels.end())
    return dispatchCollective(local, call); // The whole group is here.

  auto groupSize = static_cast<int64_t>(group->members.size());
  int64_t position = group->position;
  if (layout.processOfDevice[call.deviceId] != layout.rank)
    return Status::error(prefix() + ": device " +
                         std::to_string(call.deviceId) +
                         " is driven by rank " +
                         std::to_string(layout.processOfDevice[call.deviceId]) +
                         ", not by this process (rank " +
                         std::to_string(layout.rank) + ")");
  Status argumentError = checkCollectiveCall(call, groupSize);
  int64_t localMembers = 0;
  for (int64_t member : group->members)
    localMembers += layout.processOfDevice[member] == layout.rank;

  std::unique_lock<std::mutex> lock(mutex);
  auto abortedError = [&]() {
    return Status::error(prefix() + ": the communicator was aborted: " +
                         abortReason.message());
  };
  if (aborted)
    return abortedError();
  uint64_t sequence = callCounts[deviceSet][call.deviceId]++;
  std::shared_ptr<Slot> &entry = slots[{deviceSet, sequence}];
  if (!entry) {
    entry = std::make_shared<Slot>();
    entry->request = call;
    entry->members = group->members;
    entry->inputs.assign(groupSize, nullptr);
    entry->outputs.assign(groupSize, nullptr);
    entry->present.assign(groupSize, false);
  }
  std::shared_ptr<Slot> slot = entry;
  std::string groupText = "group " + formatDeviceList(slot->members) +
                          " (call #" + std::to_string(sequence) +
                          " on this group)";
  auto fail = [&](Status failure) {
    slot->failed = true;
    slot->done = true;
    slot->result = std::move(failure);
    slot->changed.notify_all();
    return slot->result;
  };
  if (slot->failed)
    return slot->result;
  if (!argumentError)
    return fail(Status::error(prefix() + ": " + argumentError.message() +
                              "; failing " + groupText));
  if (!sameCollective(slot->request, call))
    return fail(Status::error(
        "devices disagree on call #" + std::to_string(sequence) +
        " of group " + formatDeviceList(slot->members) + ": device " +
        std::to_string(slot->request.deviceId) + " called " +
        describeCollective(slot->request) + " but device " +
        std::to_string(call.deviceId) + " called " +
        describeCollective(call)));
  slot->inputs[position] = static_cast<const uint8_t *>(call.input.data);
  slot->outputs[position] = static_cast<uint8_t *>(call.output.data);
  slot->present[position] = true;
  slot->lastArrival = Clock::now();
  bool leader = ++slot->arrived == localMembers;
  if (leader) {
    lock.unlock();
    Status result = exchange(*slot, channel->second, sequence, groupText);
    lock.lock();
    slot->result = result;
    slot->failed = !result.ok();
    slot->done = true;
    slot->changed.notify_all();
    slots.erase({deviceSet, sequence});
    return result;
  }
  // Wait for the other local members, then for the leader.
  std::chrono::milliseconds localTimeout = timeout * 2;
  while (!slot->done) {
    if (aborted)
      return abortedError();
    if (slot->arrived < localMembers) {
      Clock::time_point deadline = slot->lastArrival + localTimeout;
      if (Clock::now() >= deadline) {
        std::vector<int64_t> missing;
        for (int64_t i = 0; i < groupSize; ++i)
          if (!slot->present[i] &&
              layout.processOfDevice[slot->members[i]] == layout.rank)
            missing.push_back(slot->members[i]);
        return fail(Status::error(
            describeCollective(slot->request) + ": " + groupText +
            " made no progress for " + std::to_string(localTimeout.count()) +
            " ms; devices " + formatDeviceList(missing) +
            " of this process did not arrive"));
      }
      slot->changed.wait_until(lock, deadline);
    } else {
      slot->changed.wait(lock);
    }
  }
  return slot->result;
}

namespace {

//===----------------------------------------------------------------------===//
// What the leader of a cross-process call sends and how it writes the
// outputs, per collective kind
//===----------------------------------------------------------------------===//

constexpr size_t headerBytes = sizeof(MessageHeader);

/// One cross-process collective as this process's leader sees it: shapes,
/// where each member lives, and the messages to and from every peer.
struct Exchange {
  Exchange(Slot &slot, const Channel &channel, const ProcessLayout &layout,
           std::string what)
      : slot(slot), request(slot.request), what(std::move(what)),
        groupSize(static_cast<int64_t>(slot.members.size())),
        inShape(request.input.shape),
        outShape(*collectiveResultShape(request.kind, inShape, groupSize,
                                        request.dim, request.splitDim,
                                        request.concatDim)),
        elementSize(dtypeSize(request.input.dtype)),
        inBytes(*checkedNumBytes(request.input.dtype, inShape)),
        outBytes(*checkedNumBytes(request.input.dtype, outShape)),
        count(*checkedNumElements(inShape)), zeros(inShape.size(), 0),
        me(layout.rank), processes(channel.processes), box(inShape),
        buffers(*channel.buffers) {
    for (int64_t i = 0; i < groupSize; ++i)
      processOf.push_back(layout.processOfDevice[slot.members[i]]);
    mine = positionsOn(me);
    for (int rank : processes)
      if (rank != me)
        peers.push_back(rank);
    sendBytes.assign(peers.size(), 0);
    receiveBytes.assign(peers.size(), 0);
  }

  /// The group positions whose devices `rank` drives.
  std::vector<int64_t> positionsOn(int rank) const {
    std::vector<int64_t> positions;
    for (int64_t i = 0; i < groupSize; ++i)
      if (processOf[i] == rank)
        positions.push_back(i);
    return positions;
  }
  /// The payload of the message to peer `k` (after its header).
  uint8_t *sendPayload(size_t k) {
    return buffers.send[k].data() + headerBytes;
  }
  /// The payload received from world rank `rank`.
  const uint8_t *payload(int rank) const {
    size_t k = std::find(peers.begin(), peers.end(), rank) - peers.begin();
    return buffers.receive[k].data() + headerBytes;
  }

  Slot &slot;
  const CollectiveCall &request;
  std::string what;
  int64_t groupSize;
  const std::vector<int64_t> &inShape;
  std::vector<int64_t> outShape;
  int64_t elementSize, inBytes, outBytes, count;
  std::vector<int64_t> zeros;
  int me;
  /// The process of each group position.
  std::vector<int> processOf;
  /// The positions this process drives.
  std::vector<int64_t> mine;
  /// The channel's processes (ascending world ranks), and all but this one.
  const std::vector<int> &processes;
  std::vector<int> peers;
  /// all_to_all: the block one member sends another.
  std::vector<int64_t> box;
  int64_t boxBytes = 0;
  /// Per peer, the message buffers (header first) and the payload sizes.
  ChannelBuffers &buffers;
  std::vector<int64_t> sendBytes, receiveBytes;
};

/// How many payload bytes go to and come from each peer.
void planPayloads(Exchange &x) {
  const CollectiveCall &request = x.request;
  switch (request.kind) {
  case CommunicatorOp::AllReduce:
  case CommunicatorOp::ReduceScatter:
    for (size_t k = 0; k < x.peers.size(); ++k)
      x.sendBytes[k] = x.receiveBytes[k] = x.inBytes;
    break;
  case CommunicatorOp::AllGather:
    for (size_t k = 0; k < x.peers.size(); ++k) {
      x.sendBytes[k] = x.inBytes * static_cast<int64_t>(x.mine.size());
      x.receiveBytes[k] =
          x.inBytes * static_cast<int64_t>(x.positionsOn(x.peers[k]).size());
    }
    break;
  case CommunicatorOp::AllToAll:
    x.box[request.splitDim] /= x.groupSize;
    x.boxBytes = *checkedNumBytes(request.input.dtype, x.box);
    for (size_t k = 0; k < x.peers.size(); ++k)
      x.sendBytes[k] = x.receiveBytes[k] =
          x.boxBytes * static_cast<int64_t>(x.mine.size() *
                                            x.positionsOn(x.peers[k]).size());
    break;
  case CommunicatorOp::CollectivePermute:
    for (size_t k = 0; k < x.peers.size(); ++k)
      for (const SourceTargetPair &pair : request.pairs) {
        if (x.processOf[pair.first] == x.me &&
            x.processOf[pair.second] == x.peers[k])
          x.sendBytes[k] += x.inBytes;
        if (x.processOf[pair.first] == x.peers[k] &&
            x.processOf[pair.second] == x.me)
          x.receiveBytes[k] += x.inBytes;
      }
    break;
  }
}

// all_reduce and reduce_scatter: every process sends the reduction of its
// members' inputs, and every process reduces the partials in rank order.

Status packReduction(Exchange &x) {
  // This process's partial result, then the same bytes to every peer.
  std::vector<const void *> inputs;
  for (int64_t i : x.mine)
    inputs.push_back(x.slot.inputs[i]);
  if (Status status = reduceElements(x.request.reduction, x.request.input.dtype,
                                     inputs, x.sendPayload(0), x.count);
      !status)
    return Status::error(x.what + ": " + status.message());
  for (size_t k = 1; k < x.peers.size(); ++k)
    if (x.inBytes)
      std::memcpy(x.sendPayload(k), x.sendPayload(0), x.inBytes);
  return Status::success();
}

Status writeReduction(Exchange &x) {
  const CollectiveCall &request = x.request;
  std::vector<const void *> partials;
  for (int rank : x.processes)
    partials.push_back(rank == x.me ? x.sendPayload(0) : x.payload(rank));
  // all_reduce reduces straight into the first local output (no output
  // aliases a message buffer); reduce_scatter through a full buffer.
  bool scatter = request.kind == CommunicatorOp::ReduceScatter;
  if (scatter)
    x.buffers.reduced.resize(x.inBytes);
  uint8_t *reduced =
      scatter ? x.buffers.reduced.data() : x.slot.outputs[x.mine.front()];
  if (Status status = reduceElements(request.reduction, request.input.dtype,
                                     partials, reduced, x.count);
      !status)
    return Status::error(x.what + ": " + status.message());
  for (int64_t i : x.mine) {
    if (!scatter) {
      if (x.slot.outputs[i] != reduced && x.inBytes)
        std::memcpy(x.slot.outputs[i], reduced, x.inBytes);
      continue;
    }
    std::vector<int64_t> offset = x.zeros;
    offset[request.dim] = i * x.outShape[request.dim];
    copyTensorBox(reduced, x.inShape, offset, x.slot.outputs[i], x.outShape,
                  x.zeros, x.outShape, x.elementSize);
  }
  return Status::success();
}

// all_gather: every process sends its members' inputs.

Status packAllGather(Exchange &x) {
  for (size_t k = 0; k < x.peers.size(); ++k)
    for (size_t m = 0; m < x.mine.size(); ++m)
      if (x.inBytes)
        std::memcpy(x.sendPayload(k) + m * x.inBytes, x.slot.inputs[x.mine[m]],
                    x.inBytes);
  return Status::success();
}

Status writeAllGather(Exchange &x) {
  const CollectiveCall &request = x.request;
  uint8_t *first = x.slot.outputs[x.mine.front()];
  std::map<int, int64_t> taken;
  for (int64_t i = 0; i < x.groupSize; ++i) {
    int process = x.processOf[i];
    const uint8_t *source =
        process == x.me ? x.slot.inputs[i]
                        : x.payload(process) + taken[process]++ * x.inBytes;
    std::vector<int64_t> offset = x.zeros;
    offset[request.dim] = i * x.inShape[request.dim];
    copyTensorBox(source, x.inShape, x.zeros, first, x.outShape, offset,
                  x.inShape, x.elementSize);
  }
  for (int64_t i : x.mine)
    if (x.slot.outputs[i] != first && x.outBytes)
      std::memcpy(x.slot.outputs[i], first, x.outBytes);
  return Status::success();
}

// all_to_all: a process sends only the blocks the receiving process's
// members need, as (its member, their member) pairs in order.

Status packAllToAll(Exchange &x) {
  const CollectiveCall &request = x.request;
  for (size_t k = 0; k < x.peers.size(); ++k) {
    int64_t at = 0;
    for (int64_t i : x.mine)
      for (int64_t j : x.positionsOn(x.peers[k])) {
        std::vector<int64_t> offset = x.zeros;
        offset[request.splitDim] = j * x.box[request.splitDim];
        copyTensorBox(x.slot.inputs[i], x.inShape, offset,
                      x.sendPayload(k) + at * x.boxBytes, x.box, x.zeros, x.box,
                      x.elementSize);
        ++at;
      }
  }
  return Status::success();
}

Status writeAllToAll(Exchange &x) {
  const CollectiveCall &request = x.request;
  for (size_t jl = 0; jl < x.mine.size(); ++jl) {
    int64_t j = x.mine[jl];
    std::map<int, int64_t> taken;
    for (int64_t i = 0; i < x.groupSize; ++i) {
      std::vector<int64_t> outOffset = x.zeros;
      outOffset[request.concatDim] = i * x.box[request.concatDim];
      if (x.processOf[i] == x.me) {
        std::vector<int64_t> inOffset = x.zeros;
        inOffset[request.splitDim] = j * x.box[request.splitDim];
        copyTensorBox(x.slot.inputs[i], x.inShape, inOffset, x.slot.outputs[j],
                      x.outShape, outOffset, x.box, x.elementSize);
        continue;
      }
      // The sender packed (its member, our member) pairs in order.
      int64_t il = taken[x.processOf[i]]++;
      const uint8_t *block =
          x.payload(x.processOf[i]) + (il * x.mine.size() + jl) * x.boxBytes;
      copyTensorBox(block, x.box, x.zeros, x.slot.outputs[j], x.outShape,
                    outOffset, x.box, x.elementSize);
    }
  }
  return Status::success();
}

// collective_permute: a process sends only the inputs whose targets live
// on the receiving process, in pair order.

Status packCollectivePermute(Exchange &x) {
  for (size_t k = 0; k < x.peers.size(); ++k) {
    int64_t at = 0;
    for (const SourceTargetPair &pair : x.request.pairs)
      if (x.processOf[pair.first] == x.me &&
          x.processOf[pair.second] == x.peers[k])
        std::memcpy(x.sendPayload(k) + x.inBytes * at++,
                    x.slot.inputs[pair.first], x.inBytes);
  }
  return Status::success();
}

Status writeCollectivePermute(Exchange &x) {
  // Local sources may be local targets' outputs (in place): read them all
  // before writing any.
  std::map<int64_t, std::vector<uint8_t>> localSources;
  std::map<int64_t, const uint8_t *> sourceOf;
  std::map<int, int64_t> taken;
  for (const SourceTargetPair &pair : x.request.pairs) {
    if (x.processOf[pair.second] != x.me)
      continue;
    if (x.processOf[pair.first] == x.me) {
      const uint8_t *from = x.slot.inputs[pair.first];
      localSources[pair.second].assign(from, from + x.inBytes);
      sourceOf[pair.second] = localSources[pair.second].data();
    } else {
      int process = x.processOf[pair.first];
      sourceOf[pair.second] = x.payload(process) + taken[process]++ * x.inBytes;
    }
  }
  for (int64_t t : x.mine) {
    if (!x.inBytes)
      continue;
    auto found = sourceOf.find(t);
    if (found == sourceOf.end())
      std::memset(x.slot.outputs[t], 0, x.inBytes);
    else
      std::memcpy(x.slot.outputs[t], found->second, x.inBytes);
  }
  return Status::success();
}

/// The two steps of a collective kind around the transfer.
struct KindSteps {
  /// Writes every peer's payload.
  Status (*pack)(Exchange &);
  /// Writes every local member's output from the inputs here and the
  /// payloads received.
  Status (*write)(Exchange &);
};

KindSteps stepsOf(CommunicatorOp kind) {
  switch (kind) {
  case CommunicatorOp::AllReduce:
  case CommunicatorOp::ReduceScatter:
    return {packReduction, writeReduction};
  case CommunicatorOp::AllGather:
    return {packAllGather, writeAllGather};
  case CommunicatorOp::AllToAll:
    return {packAllToAll, writeAllToAll};
  case CommunicatorOp::CollectivePermute:
    return {packCollectivePermute, writeCollectivePermute};
  }
  return {nullptr, nullptr};
}

/// Payloads from this size on (bytes of one member's input) go through
/// MPI's own collectives where one fits (bench/mpi.sh: below it, one
/// message per pair with the header in front is as fast).
constexpr int64_t kMpiCollectiveBytes = 32 << 10;

/// MPI's datatype and operation for a reduction of `dtype`, when MPI's
/// matches ours bit for bit: sums of floats (max and min propagate NaN
/// here and need not in MPI), sums, maxima and minima of integers.
bool mpiReduction(DType dtype, ReductionCode kind, MPI_Datatype &type,
                  MPI_Op &op) {
  bool floating = dtype == DType::F32 || dtype == DType::F64;
  switch (dtype) {
  case DType::F32:
    type = MPI_FLOAT;
    break;
  case DType::F64:
    type = MPI_DOUBLE;
    break;
  case DType::I32:
    type = MPI_INT32_T;
    break;
  case DType::I64:
    type = MPI_INT64_T;
    break;
  default:
    return false;
  }
  switch (kind) {
  case ReductionCode::Sum:
    op = MPI_SUM;
    return true;
  case ReductionCode::Max:
    op = MPI_MAX;
    return !floating;
  case ReductionCode::Min:
    op = MPI_MIN;
    return !floating;
  default:
    return false;
  }
}

/// Whether `x` runs as one of MPI's collectives: large enough, and laid out
/// as MPI's collective lays out its buffers — every process the same
/// number of consecutive group positions, in rank order (all_gather along
/// dimension 0; all_to_all one member per process, split and joined along
/// dimension 0; reduce_scatter along dimension 0 and all_reduce of a type
/// MPI reduces as we do).
bool fitsMpiCollective(const Exchange &x) {
  const CollectiveCall &request = x.request;
  if (x.inBytes < kMpiCollectiveBytes || x.processes.size() < 2 ||
      x.inBytes > INT32_MAX)
    return false;
  auto perProcess = static_cast<int64_t>(x.mine.size());
  bool ordered = x.groupSize == perProcess *
                                    static_cast<int64_t>(x.processes.size());
  for (int64_t i = 0; ordered && i < x.groupSize; ++i)
    ordered = x.processOf[i] == x.processes[i / perProcess];
  MPI_Datatype type;
  MPI_Op op;
  switch (request.kind) {
  case CommunicatorOp::AllReduce:
    return mpiReduction(request.input.dtype, request.reduction, type, op) &&
           x.count <= INT32_MAX;
  case CommunicatorOp::ReduceScatter:
    return ordered && request.dim == 0 &&
           mpiReduction(request.input.dtype, request.reduction, type, op);
  case CommunicatorOp::AllGather:
    return ordered && request.dim == 0 &&
           x.outBytes <= static_cast<int64_t>(INT32_MAX);
  case CommunicatorOp::AllToAll:
    return ordered && perProcess == 1 && request.splitDim == 0 &&
           request.concatDim == 0;
  default:
    return false;
  }
}

} // namespace

Status MpiCommunicator::runMpiCollective(Exchange &x, Channel &channel) {
  const CollectiveCall &request = x.request;
  uint8_t *first = x.slot.outputs[x.mine.front()];
  const uint8_t *onlyInput =
      x.mine.size() == 1 ? x.slot.inputs[x.mine.front()] : nullptr;
  std::vector<uint8_t> &staged = x.buffers.reduced;
  MPI_Request request_ = MPI_REQUEST_NULL;
  MpiProcess::Impl &mpi = process.impl();
  switch (request.kind) {
  case CommunicatorOp::AllReduce: {
    // This process's members reduced into the first output, then MPI
    // reduces across processes in place (or straight from a lone input).
    if (!onlyInput) {
      std::vector<const void *> inputs;
      for (int64_t i : x.mine)
        inputs.push_back(x.slot.inputs[i]);
      if (Status status = reduceElements(request.reduction,
                                         request.input.dtype, inputs, first,
                                         x.count);
          !status)
        return Status::error(x.what + ": " + status.message());
    }
    MPI_Datatype type;
    MPI_Op op;
    mpiReduction(request.input.dtype, request.reduction, type, op);
    const void *send =
        onlyInput && onlyInput != first ? onlyInput : MPI_IN_PLACE;
    std::lock_guard<std::mutex> guard(mpi.lock);
    PARTITA_MPI_CHECK(MPI_Iallreduce(send, first, static_cast<int>(x.count),
                                     type, op, channel.collectiveComm, &request_));
    break;
  }
  case CommunicatorOp::ReduceScatter: {
    // This process's members reduced into a full buffer (or a lone input as
    // it is); MPI reduces across processes and hands each process the
    // blocks of its consecutive positions, which go to its members.
    const void *send = onlyInput;
    if (!onlyInput) {
      staged.resize(x.inBytes);
      std::vector<const void *> inputs;
      for (int64_t i : x.mine)
        inputs.push_back(x.slot.inputs[i]);
      if (Status status = reduceElements(request.reduction,
                                         request.input.dtype, inputs,
                                         staged.data(), x.count);
          !status)
        return Status::error(x.what + ": " + status.message());
      send = staged.data();
    }
    int64_t mineCount =
        x.count / x.groupSize * static_cast<int64_t>(x.mine.size());
    void *receive = first;
    if (x.mine.size() > 1) {
      x.buffers.scattered.resize(x.outBytes * x.mine.size());
      receive = x.buffers.scattered.data();
    }
    MPI_Datatype type;
    MPI_Op op;
    mpiReduction(request.input.dtype, request.reduction, type, op);
    std::lock_guard<std::mutex> guard(mpi.lock);
    PARTITA_MPI_CHECK(MPI_Ireduce_scatter_block(
        send, receive, static_cast<int>(mineCount), type, op,
        channel.collectiveComm, &request_));
    break;
  }
  case CommunicatorOp::AllGather: {
    // This process's members' inputs side by side, gathered by rank.
    int64_t bytes = x.inBytes * static_cast<int64_t>(x.mine.size());
    const void *send = onlyInput;
    if (!onlyInput) {
      staged.resize(bytes);
      for (size_t m = 0; m < x.mine.size(); ++m)
        std::memcpy(staged.data() + m * x.inBytes, x.slot.inputs[x.mine[m]],
                    x.inBytes);
      send = staged.data();
    }
    std::lock_guard<std::mutex> guard(mpi.lock);
    PARTITA_MPI_CHECK(MPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE,
                                     first, static_cast<int>(bytes), MPI_BYTE,
                                     channel.collectiveComm, &request_));
    break;
  }
  default: { // AllToAll, one member per process, along dimension 0.
    int64_t block = x.inBytes / x.groupSize;
    const void *send = onlyInput;
    if (onlyInput == first) {
      staged.assign(onlyInput, onlyInput + x.inBytes);
      send = staged.data();
    }
    std::lock_guard<std::mutex> guard(mpi.lock);
    PARTITA_MPI_CHECK(MPI_Ialltoall(send, static_cast<int>(block), MPI_BYTE,
                                    first, static_cast<int>(block), MPI_BYTE,
                                    channel.collectiveComm, &request_));
    break;
  }
  }
  std::vector<MPI_Request> requests = {request_};
  auto stalled = [&](const std::vector<int> &) {
    return std::string("a process of the group did not finish MPI's ") +
           communicatorOpName(request.kind) + " (this is rank " +
           std::to_string(x.me) + ")";
  };
  if (Status waited = waitPolled(x, channel, requests, stalled); !waited)
    return waited;
  if (request.kind == CommunicatorOp::ReduceScatter) {
    // Each member's block, in position order.
    if (x.mine.size() > 1)
      for (size_t m = 0; m < x.mine.size(); ++m)
        std::memcpy(x.slot.outputs[x.mine[m]],
                    x.buffers.scattered.data() + m * x.outBytes, x.outBytes);
    return Status::success();
  }
  int64_t outBytes = request.kind == CommunicatorOp::AllReduce ? x.inBytes
                                                               : x.outBytes;
  for (int64_t i : x.mine)
    if (x.slot.outputs[i] != first && outBytes)
      std::memcpy(x.slot.outputs[i], first, outBytes);
  return Status::success();
}

Status MpiCommunicator::waitPolled(Exchange &x, Channel &channel,
                                   std::vector<MPI_Request> &requests,
                                   const StallDescription &stalled) {
  auto interrupted = [&]() -> Status {
    std::lock_guard<std::mutex> guard(mutex);
    if (aborted)
      return Status::error(
          x.what + ": the communicator was aborted: " + abortReason.message());
    return Status::success();
  };
  Status waited = waitForRequests(process.impl(), requests, timeout, x.what,
                                  stalled, interrupted);
  if (!waited) {
    // MPI may still use these buffers; the group gets fresh ones.
    std::lock_guard<std::mutex> guard(mutex);
    abandoned.push_back(channel.buffers);
    channel.buffers = std::make_shared<ChannelBuffers>();
  }
  return waited;
}

Status MpiCommunicator::exchange(Slot &slot, Channel &channel,
                                 uint64_t sequence,
                                 const std::string &groupText) {
  if (stopAtExchange > 0 && ++exchanges == stopAtExchange)
    std::raise(SIGSTOP);
  Exchange x(slot, channel, layout,
             describeCollective(slot.request) + ": " + groupText);
  KindSteps steps = stepsOf(slot.request.kind);
  if (!steps.pack)
    return Status::error(x.what + ": unknown collective kind");
  uint64_t signature = fnv1a(describeCollective(slot.request) +
                             groupText.substr(0, groupText.find(" (call")));
  if (channel.collectiveComm != MPI_COMM_NULL && fitsMpiCollective(x)) {
    // The headers alone (every process made this call; a missing one is
    // named), then the data through MPI's own collective.
    x.buffers.send.assign(x.peers.size(), std::vector<uint8_t>(headerBytes));
    x.buffers.receive.assign(x.peers.size(),
                             std::vector<uint8_t>(headerBytes));
    if (Status status = transfer(x, channel, sequence, signature); !status)
      return status;
    return runMpiCollective(x, channel);
  }
  planPayloads(x);
  x.buffers.send.resize(x.peers.size());
  x.buffers.receive.resize(x.peers.size());
  for (size_t k = 0; k < x.peers.size(); ++k) {
    if (headerBytes + x.sendBytes[k] > static_cast<size_t>(INT32_MAX) ||
        headerBytes + x.receiveBytes[k] > static_cast<size_t>(INT32_MAX))
      return Status::error(x.what + ": a message of more than 2 GiB");
    x.buffers.send[k].resize(headerBytes + x.sendBytes[k]);
    x.buffers.receive[k].resize(headerBytes + x.receiveBytes[k]);
  }
  if (Status status = steps.pack(x); !status)
    return status;
  if (Status status = transfer(x, channel, sequence, signature); !status)
    return status;
  return steps.write(x);
}

Status MpiCommunicator::transfer(Exchange &x, Channel &channel,
                                 uint64_t sequence, uint64_t signature) {
  // Index of a world rank in the channel's communicator.
  auto commRank = [&](int rank) {
    return static_cast<int>(std::lower_bound(channel.processes.begin(),
                                             channel.processes.end(), rank) -
                            channel.processes.begin());
  };
  // Header + payload each way, posted together, waited for with polling.
  const std::vector<int> &peers = x.peers;
  ChannelBuffers &buffers = x.buffers;
  std::vector<MPI_Request> requests(2 * peers.size(), MPI_REQUEST_NULL);
  MpiProcess::Impl &mpi = process.impl();
  {
    std::lock_guard<std::mutex> guard(mpi.lock);
    for (size_t k = 0; k < peers.size(); ++k) {
      MessageHeader header{headerMagic, sequence, signature,
                           static_cast<uint64_t>(x.sendBytes[k])};
      std::memcpy(buffers.send[k].data(), &header, headerBytes);
      PARTITA_MPI_CHECK(MPI_Irecv(buffers.receive[k].data(),
                                  static_cast<int>(buffers.receive[k].size()),
                                  MPI_BYTE, commRank(peers[k]), channel.tag,
                                  channel.comm, &requests[2 * k]));
      PARTITA_MPI_CHECK(MPI_Isend(buffers.send[k].data(),
                                  static_cast<int>(buffers.send[k].size()),
                                  MPI_BYTE, commRank(peers[k]), channel.tag,
                                  channel.comm, &requests[2 * k + 1]));
    }
  }
  auto stalled = [&](const std::vector<int> &pending) {
    std::string text;
    for (int index : pending) {
      int rank = peers[index / 2];
      if (index % 2 == 0)
        text += std::string(text.empty() ? "" : "; ") + "rank " +
                std::to_string(rank) + " (devices " + devicesOfRank(rank) +
                ") did not send its part";
    }
    if (text.empty())
      for (int index : pending)
        text += std::string(text.empty() ? "" : "; ") + "rank " +
                std::to_string(peers[index / 2]) + " (devices " +
                devicesOfRank(peers[index / 2]) + ") did not take its part";
    return text + " (this is rank " + std::to_string(x.me) + ")";
  };
  if (Status waited = waitPolled(x, channel, requests, stalled); !waited)
    return waited;
  for (size_t k = 0; k < peers.size(); ++k) {
    MessageHeader header;
    std::memcpy(&header, buffers.receive[k].data(), headerBytes);
    if (header.magic != headerMagic || header.sequence != sequence ||
        header.signature != signature ||
        header.payloadBytes != static_cast<uint64_t>(x.receiveBytes[k]))
      return Status::error(
          x.what + ": rank " + std::to_string(peers[k]) +
          " made a different collective as call #" +
          std::to_string(header.sequence) +
          " on this group (the processes disagree on the program)");
  }
  return Status::success();
}

Expected<std::unique_ptr<Communicator>>
createMpiCommunicator(MpiProcess &process, const Mesh &mesh,
                      const ProcessLayout &layout,
                      std::chrono::milliseconds timeout) {
  if (layout.processes != process.size() || layout.rank != process.rank())
    return Status::error("the process layout is for rank " +
                         std::to_string(layout.rank) + " of " +
                         std::to_string(layout.processes) +
                         " but this is rank " +
                         std::to_string(process.rank()) + " of " +
                         std::to_string(process.size()));
  auto communicator =
      std::make_unique<MpiCommunicator>(process, mesh, layout, timeout);
  if (Status status = communicator->createChannels(); !status)
    return status;
  return std::unique_ptr<Communicator>(std::move(communicator));
}

Expected<std::vector<std::vector<uint8_t>>>
bootstrapUniqueIds(MpiProcess &process,
                   const std::vector<std::vector<int>> &processSets,
                   size_t idBytes, const UniqueIdFactory &create) {
  MpiProcess::Impl &mpi = process.impl();
  std::vector<std::vector<uint8_t>> ids(processSets.size());
  for (size_t s = 0; s < processSets.size(); ++s) {
    const std::vector<int> &set = processSets[s];
    if (set.empty() || !std::is_sorted(set.begin(), set.end()) ||
        set.front() < 0 || set.back() >= mpi.size)
      return Status::error("process set " + std::to_string(s) +
                           " is not an ascending list of ranks below " +
                           std::to_string(mpi.size));
    bool member = std::binary_search(set.begin(), set.end(), mpi.rank);
    MPI_Comm comm = MPI_COMM_NULL;
    {
      std::lock_guard<std::mutex> guard(mpi.lock);
      PARTITA_MPI_CHECK(MPI_Comm_split(
          MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, mpi.rank, &comm));
    }
    if (!member)
      continue;
    std::vector<uint8_t> id(idBytes, 0);
    // The root reports a failure to make the id with a leading 0 byte.
    std::vector<uint8_t> message(idBytes + 1, 0);
    if (mpi.rank == set.front()) {
      Status made = create(id);
      if (made && id.size() == idBytes) {
        message[0] = 1;
        std::copy(id.begin(), id.end(), message.begin() + 1);
      }
    }
    std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
    {
      std::lock_guard<std::mutex> guard(mpi.lock);
      PARTITA_MPI_CHECK(MPI_Ibcast(message.data(),
                                   static_cast<int>(message.size()), MPI_BYTE,
                                   0, comm, &requests[0]));
    }
    Status waited = waitForRequests(
        mpi, requests, mpi.timeout,
        "broadcast of the unique id of process set " + std::to_string(s));
    {
      std::lock_guard<std::mutex> guard(mpi.lock);
      if (waited)
        MPI_Comm_free(&comm);
    }
    if (!waited)
      return waited;
    if (message[0] != 1)
      return Status::error("rank " + std::to_string(set.front()) +
                           " could not make the unique id of process set " +
                           std::to_string(s));
    ids[s].assign(message.begin() + 1, message.end());
  }
  return ids;
}

} // namespace partita
