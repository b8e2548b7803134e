//===- MpiCommunicator.cpp - Collectives across processes -----------------===//
//
// A group whose devices all live in this process goes to the in-process
// communicator unchanged. A group that spans processes meets in two steps:
//
//  1. its local members rendezvous in this process (as in the in-process
//     communicator); the last to arrive becomes the process's leader;
//  2. the leader exchanges one message with every other process of the
//     group, on the MPI communicator of that process set, tagged by the
//     group (groups sharing a process set get distinct tags; a second tag
//     carries data sent apart from its header), and writes every local
//     member's output.
//
// What a process sends depends on the collective: for reductions the
// reduction of its members' inputs (so the bytes on the wire do not grow
// with the devices per process); for all_gather its members' inputs; for
// all_to_all only the blocks the receiving process's members need; for
// collective_permute only the inputs whose targets live there (the
// messages per kind, and MPI's own collectives where a layout allows them,
// are MpiExchange.cpp's). Every process then combines the same messages in
// rank order, so all replicas get identical bits. Each message starts with a
// header (the call's sequence number on its group and a hash of its
// description), so two processes that disagree on the program get an error,
// not wrong numbers.
//
// Waiting polls with sleeps (MpiInternal.h). A call that makes no progress
// for the timeout fails naming the ranks and devices that did not send;
// waits inside the process get twice that, so that the cross-process
// failure, which names the culprit, is the one reported.
//
//===----------------------------------------------------------------------===//
#include "MpiExchange.h"
#include "MpiInternal.h"

#include "partita/Runtime/Communication/InProcessCommunicator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

namespace partita {

using namespace mpi_exchange;

namespace {

} // namespace

class MpiCommunicator final : public CallForwardingCommunicator {
public:
  MpiCommunicator(MpiProcess &process, Mesh mesh, ProcessLayout layout,
                  std::chrono::milliseconds timeout)
      : process(process), meshValue(std::move(mesh)),
        layout(std::move(layout)), timeout(timeout),
        local(meshValue, timeout * 2),
        plans(static_cast<size_t>(meshValue.numDevices())),
        stopAtExchange(debugStopPoint(process.rank())) {}

  ~MpiCommunicator() override {
    if (aborted)
      return; // Requests may be pending on these communicators.
    // The heartbeat thread makes MPI calls too: hold the process's lock.
    std::lock_guard<std::mutex> guard(process.impl().lock);
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
    {
      // Direct data carries its call in its tag (dataTag()) where tags are
      // wide enough for a hash to tell calls apart.
      std::lock_guard<std::mutex> guard(mpi.lock);
      int *bound = nullptr, found = 0;
      PARTITA_MPI_CHECK(
          MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bound, &found));
      tagUpperBound = found && bound ? *bound : 0;
      // A test hook: direct data beside headers everywhere, the path of
      // groups without a communicator of their own.
      if (std::getenv("PARTITA_DEBUG_MPI_HEADERS"))
        tagUpperBound = 0;
    }
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
      // Two tags per group: headers (and whole messages) on the even one,
      // a direct exchange's data on the odd one (transfer()).
      int tag = 2 * nextTag[processes]++;
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
  /// What one device's calls over one list of axes resolve to: its group,
  /// the group's channel and placement, and the device's call counter on
  /// it. Made at the first such call and kept, so a call resolves its
  /// group with a short search instead of allocations and map lookups.
  struct Plan {
    std::vector<std::string> axes;
    std::vector<int64_t> members; // Group order.
    int64_t position = 0;
    std::vector<int64_t> deviceSet; // Sorted.
    Channel *channel = nullptr;     // Null: the whole group is here.
    int64_t localMembers = 0;
    uint64_t *calls = nullptr;
    GroupPlacement placement;
    /// The slot of this device's calls when it is the process's only
    /// member of the group, reused from call to call (a device makes one
    /// call at a time).
    std::unique_ptr<Slot> solo;
  };
  /// The plan of `call` (under `mutex`), made if it is new.
  Expected<Plan *> planFor(const CollectiveCall &call);

  Status runCall(const CollectiveCall &call) override;
  /// The leader's part of a cross-process call: messages to and from the
  /// group's other processes, then every local member's output.
  Status exchange(Slot &slot, Channel &channel, uint64_t sequence);
  /// Sends and receives the messages `x` planned (header first) and checks
  /// that every peer made the same call. With `direct`, the buffers hold
  /// the headers alone and each peer's data moves as a second message,
  /// straight between the members' buffers, on the group's second tag (so
  /// a header always meets a header, whatever call a peer made), posted
  /// before the header.
  ///
  /// With a non-zero `dataTag` (direct only) there are no headers: each
  /// peer's data moves on the group's own communicator under that tag,
  /// which encodes the call (dataTag()), and a peer that made another call
  /// is found by probing its first pending message there.
  Status transfer(Exchange &x, Channel &channel, uint64_t sequence,
                  uint64_t signature,
                  const std::vector<DirectPart> *direct = nullptr,
                  int dataTag = 0);
  /// One transfer()'s requests and the checks made on its peers.
  class Transfer;
  /// The tag of round `round` of call `sequence` (with `signature`) of a
  /// direct exchange on `channel`: a hash of the three above
  /// kFirstDataTag, or 0 when the data must go beside headers (MPI's tags
  /// are too narrow for a hash, or the group has no communicator of its
  /// own). docs/Distributed.md "The call in the data's tag".
  int dataTag(const Channel &channel, uint64_t signature, uint64_t sequence,
              int round) const;
  /// The data of `x` through MPI's own collective on the channel's
  /// communicator (after the headers), polled like transfer().
  Status runMpiCollective(Exchange &x, Channel &channel);
  /// Polls `requests` to completion with the communicator's timeout,
  /// failing when it is aborted; after a failure the group's buffers are
  /// left to MPI and the group gets fresh ones.
  Status waitPolled(Exchange &x, Channel &channel,
                    std::vector<MPI_Request> &requests,
                    const StallDescription &stalled,
                    const PendingRanks &pendingRanks = {},
                    const std::function<Status()> &check = {});
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
  /// Per device, its plans (few: one per list of axes it calls over).
  std::vector<std::vector<std::unique_ptr<Plan>>> plans;
  /// Buffers of requests left pending by a failed exchange: MPI may still
  /// touch them, so they live as long as the communicator.
  std::vector<std::shared_ptr<ChannelBuffers>> abandoned;
  std::atomic<int64_t> exchanges{0};
  int64_t stopAtExchange = 0;
  /// MPI_TAG_UB (0 until createChannels()).
  int tagUpperBound = 0;
  /// Tags below this are the channels' header tags (two per group, at most
  /// kMaxDuplicates groups per communicator of their own).
  static constexpr int kFirstDataTag = 1 << 16;
};

int MpiCommunicator::dataTag(const Channel &channel, uint64_t signature,
                             uint64_t sequence, int round) const {
  // 2^24 tags at least: two different calls share a tag with a
  // probability below 1e-7.
  if (channel.collectiveComm == MPI_COMM_NULL || tagUpperBound < (1 << 24))
    return 0;
  uint64_t hash =
      mixWord(mixWord(signature, sequence), static_cast<uint64_t>(round));
  auto span = static_cast<uint64_t>(tagUpperBound - kFirstDataTag) + 1;
  return kFirstDataTag + static_cast<int>(hash % span);
}

Expected<MpiCommunicator::Plan *>
MpiCommunicator::planFor(const CollectiveCall &call) {
  bool known = call.deviceId >= 0 &&
               call.deviceId < static_cast<int64_t>(plans.size());
  if (known)
    for (const std::unique_ptr<Plan> &plan : plans[call.deviceId])
      if (plan->axes == call.axes)
        return plan.get();
  Expected<CollectiveGroup> group =
      resolveGroup(meshValue, call.deviceId, call.axes);
  if (!group)
    return group.status();
  if (!known) // resolveGroup refuses such a device; kept as a guard.
    return Status::error("device " + std::to_string(call.deviceId) +
                         " is not in the mesh");
  auto plan = std::make_unique<Plan>();
  plan->axes = call.axes;
  plan->members = std::move(group->members);
  plan->position = group->position;
  plan->deviceSet = plan->members;
  std::sort(plan->deviceSet.begin(), plan->deviceSet.end());
  auto channel = channels.find(plan->deviceSet);
  if (channel != channels.end()) {
    plan->channel = &channel->second;
    plan->placement =
        placeGroup(plan->members, channel->second.processes, layout);
  }
  for (int64_t member : plan->members)
    plan->localMembers += layout.processOfDevice[member] == layout.rank;
  plan->calls = &callCounts[plan->deviceSet][call.deviceId];
  plans[call.deviceId].push_back(std::move(plan));
  return plans[call.deviceId].back().get();
}

Status MpiCommunicator::runCall(const CollectiveCall &call) {
  auto prefix = [&]() {
    return describeCollective(call) + " on device " +
           std::to_string(call.deviceId);
  };
  Plan *plan = nullptr;
  {
    std::lock_guard<std::mutex> guard(mutex);
    Expected<Plan *> found = planFor(call);
    if (!found)
      return Status::error(prefix() + ": " + found.status().message());
    plan = *found;
  }
  if (!plan->channel)
    return dispatchCollective(local, call); // The whole group is here.
  const std::vector<int64_t> &deviceSet = plan->deviceSet;

  auto groupSize = static_cast<int64_t>(plan->members.size());
  int64_t position = plan->position;
  if (layout.processOfDevice[call.deviceId] != layout.rank)
    return Status::error(prefix() + ": device " +
                         std::to_string(call.deviceId) +
                         " is driven by rank " +
                         std::to_string(layout.processOfDevice[call.deviceId]) +
                         ", not by this process (rank " +
                         std::to_string(layout.rank) + ")");
  Status argumentError = checkCollectiveCall(call, groupSize);
  int64_t localMembers = plan->localMembers;

  std::unique_lock<std::mutex> lock(mutex);
  auto abortedError = [&]() {
    return Status::error(prefix() + ": the communicator was aborted: " +
                         abortReason.message());
  };
  if (aborted)
    return abortedError();
  uint64_t sequence = (*plan->calls)++;
  if (localMembers == 1) {
    // The process's only member leads at once: no rendezvous, no shared
    // slot (the common layout of one device per process).
    lock.unlock();
    if (!argumentError)
      return Status::error(prefix() + ": " + argumentError.message() +
                           "; failing group " +
                           formatDeviceList(plan->members) + " (call #" +
                           std::to_string(sequence) + " on this group)");
    if (!plan->solo) {
      plan->solo = std::make_unique<Slot>();
      plan->solo->members = plan->members;
      plan->solo->placement = &plan->placement;
      plan->solo->inputs.assign(groupSize, nullptr);
      plan->solo->outputs.assign(groupSize, nullptr);
    }
    Slot &slot = *plan->solo;
    slot.request = call;
    slot.inputs[position] = static_cast<const uint8_t *>(call.input.data);
    slot.outputs[position] = static_cast<uint8_t *>(call.output.data);
    slot.arrived = 1;
    return exchange(slot, *plan->channel, sequence);
  }
  std::shared_ptr<Slot> &entry = slots[{deviceSet, sequence}];
  if (!entry) {
    entry = std::make_shared<Slot>();
    entry->request = call;
    entry->members = plan->members;
    entry->placement = &plan->placement;
    entry->inputs.assign(groupSize, nullptr);
    entry->outputs.assign(groupSize, nullptr);
    entry->present.assign(groupSize, false);
  }
  std::shared_ptr<Slot> slot = entry;
  // Built only for a message.
  auto groupText = [&] {
    return "group " + formatDeviceList(slot->members) + " (call #" +
           std::to_string(sequence) + " on this group)";
  };
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
                              "; failing " + groupText()));
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
    Status result = exchange(*slot, *plan->channel, sequence);
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
            describeCollective(slot->request) + ": " + groupText() +
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

Status MpiCommunicator::runMpiCollective(Exchange &x, Channel &channel) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (Status started = startMpiCollective(x, channel.collectiveComm,
                                          process.impl().lock, request);
      !started)
    return started;
  std::vector<MPI_Request> requests = {request};
  auto stalled = [&](const std::vector<int> &) {
    return std::string("a process of the group did not finish MPI's ") +
           communicatorOpName(x.request.kind) + " (this is rank " +
           std::to_string(x.me) + ")";
  };
  if (Status waited = waitPolled(x, channel, requests, stalled); !waited)
    return waited;
  finishMpiCollective(x);
  return Status::success();
}

Status MpiCommunicator::waitPolled(Exchange &x, Channel &channel,
                                   std::vector<MPI_Request> &requests,
                                   const StallDescription &stalled,
                                   const PendingRanks &pendingRanks,
                                   const std::function<Status()> &check) {
  auto interrupted = [&]() -> Status {
    {
      std::lock_guard<std::mutex> guard(mutex);
      if (aborted)
        return Status::error(x.what() + ": the communicator was aborted: " +
                             abortReason.message());
    }
    return check ? check() : Status::success();
  };
  Status waited = waitForRequests(process.impl(), requests, timeout,
                                  std::function<std::string()>(
                                      [&x] { return x.what(); }),
                                  stalled, interrupted, pendingRanks);
  if (!waited) {
    // MPI may still use these buffers; the group gets fresh ones.
    std::lock_guard<std::mutex> guard(mutex);
    abandoned.push_back(channel.buffers);
    channel.buffers = std::make_shared<ChannelBuffers>();
  }
  return waited;
}

Status MpiCommunicator::exchange(Slot &slot, Channel &channel,
                                 uint64_t sequence) {
  if (stopAtExchange > 0 && ++exchanges == stopAtExchange)
    std::raise(SIGSTOP);
  Exchange x(slot, channel, layout, [&slot, sequence] {
    return describeCollective(slot.request) + ": group " +
           formatDeviceList(slot.members) + " (call #" +
           std::to_string(sequence) + " on this group)";
  });
  KindSteps steps = stepsOf(slot.request.kind);
  if (!steps.pack)
    return Status::error(x.what() + ": unknown collective kind");
  uint64_t signature = callSignature(slot.request, slot.members);
  // Message buffers of the headers alone, kept from call to call.
  auto headersOnly = [&] {
    for (auto *buffers : {&x.buffers.send, &x.buffers.receive}) {
      buffers->resize(x.peers.size());
      for (std::vector<uint8_t> &buffer : *buffers)
        buffer.resize(headerBytes);
    }
  };
  // One round of direct messages between the members' buffers: each peer's
  // data under a tag that names the call, or beside a header.
  auto directRound = [&](Status started, int round) -> Status {
    if (!started)
      return started;
    const std::vector<DirectPart> &parts = x.buffers.parts;
    if (int tag = dataTag(channel, signature, sequence, round))
      return transfer(x, channel, sequence, signature, &parts, tag);
    headersOnly();
    for (size_t k = 0; k < x.peers.size(); ++k) {
      x.sendBytes[k] = parts[k].sendBytes;
      x.receiveBytes[k] = parts[k].receiveBytes;
    }
    return transfer(x, channel, sequence, signature, &parts);
  };
  if (fitsDirectAllReduce(x)) {
    // Slices to their reducers, then the reduced slices to everyone.
    if (Status status = directRound(startDirectAllReduce(x), 1); !status)
      return status;
    if (Status status = directRound(reduceDirectAllReduceSlice(x), 2); !status)
      return status;
    finishMpiCollective(x);
    return Status::success();
  }
  if (fitsDirect(x)) {
    if (Status status = directRound(startDirect(x), 1); !status)
      return status;
    return finishDirect(x);
  }
  if (channel.collectiveComm != MPI_COMM_NULL && fitsMpiCollective(x)) {
    // The headers alone (every process made this call; a missing one is
    // named), then the data through MPI's own collective.
    headersOnly();
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
      return Status::error(x.what() + ": a message of more than 2 GiB");
    x.buffers.send[k].resize(headerBytes + x.sendBytes[k]);
    x.buffers.receive[k].resize(headerBytes + x.receiveBytes[k]);
  }
  if (Status status = steps.pack(x); !status)
    return status;
  if (Status status = transfer(x, channel, sequence, signature); !status)
    return status;
  return steps.write(x);
}

/// One call of transfer(): its requests, posted together (per peer:
/// receive, send (header), then receive, send (direct data); with a data
/// tag the data alone: receive, send), and the checks made on the peers
/// while they are waited for with polling.
class MpiCommunicator::Transfer {
public:
  Transfer(MpiCommunicator &self, Exchange &x, Channel &channel,
           uint64_t sequence, uint64_t signature,
           const std::vector<DirectPart> *direct, int dataTag)
      : self(self), x(x), channel(channel), sequence(sequence),
        signature(signature), direct(direct), dataTag(dataTag), peers(x.peers),
        buffers(x.buffers), stride(direct && !dataTag ? 4 : 2),
        requests(buffers.requests) {
    requests.assign(stride * peers.size(), MPI_REQUEST_NULL);
  }

  /// Posts every peer's requests under the process's lock, up to the
  /// first that MPI refuses; returns that failure.
  Status post() {
    std::lock_guard<std::mutex> guard(mpi.lock);
    for (size_t k = 0; k < peers.size() && posted; ++k) {
      if (dataTag)
        postTagged(k);
      else
        postWithHeader(k);
    }
    return posted;
  }

  /// Takes back the receives still pending, which would write later into
  /// memory that may be freed by then (a direct receive into a member's
  /// output, the caller's once this fails; a header into buffers freed
  /// with the communicator). MPI cancels a receive not yet matched at
  /// once; a matched one completes as its data arrives, waited for up to
  /// the timeout in all (a peer stopped in the middle of a message keeps
  /// it). A pending send only reads.
  void takeBackReceives() {
    Clock::time_point deadline = Clock::now() + self.timeout;
    for (size_t r = 0; r < requests.size(); r += 2) {
      if (requests[r] == MPI_REQUEST_NULL)
        continue;
      {
        std::lock_guard<std::mutex> guard(mpi.lock);
        MPI_Cancel(&requests[r]);
      }
      for (int done = 0; !done && Clock::now() < deadline;) {
        {
          std::lock_guard<std::mutex> guard(mpi.lock);
          MPI_Test(&requests[r], &done, MPI_STATUS_IGNORE);
        }
        if (!done)
          std::this_thread::yield();
      }
    }
  }

  /// Waits for the posted requests, then checks that every peer made this
  /// call; on failure reports a peer that made another one if there is
  /// such, and takes the pending receives back.
  Status wait() {
    auto stalled = [this](const std::vector<int> &pending) {
      return describeStall(pending);
    };
    auto pendingRanks = [this](const std::vector<int> &pending) {
      return ranksOf(pending);
    };
    if (Status waited = self.waitPolled(
            x, channel, requests, stalled, pendingRanks,
            dataTag ? std::function<Status()>([this] { return probe(); })
                    : std::function<Status()>());
        !waited) {
      // The headers that arrived, read before any receive is taken back.
      if (direct && !dataTag)
        awaitLateHeaders();
      Status different = disagreement();
      takeBackReceives();
      return different ? waited : different;
    }
    return dataTag ? Status::success() : disagreement();
  }

private:
  /// Index of a world rank in the channel's communicator (x.processes are
  /// the channel's).
  int commRank(int rank) const {
    return static_cast<int>(x.processIndex(rank));
  }

  /// Whether MPI accepted a request (`code` of `call`); keeps the first
  /// refusal in `posted`.
  bool accepted(int code, const char *call) {
    if (code != MPI_SUCCESS && posted)
      posted = mpiError(code, call, __FILE__, __LINE__);
    return code == MPI_SUCCESS;
  }

  /// Posts peer `k`'s data alone, under the data tag on the group's own
  /// communicator.
  void postTagged(size_t k) {
    MPI_Request *mine = &requests[stride * k];
    int rank = commRank(peers[k]);
    // Empty parts are sent too: every peer's call is checked.
    const DirectPart &part = (*direct)[k];
    if (accepted(MPI_Irecv(part.receive, static_cast<int>(part.receiveBytes),
                           MPI_BYTE, rank, dataTag, channel.collectiveComm,
                           &mine[0]),
                 "MPI_Irecv"))
      accepted(MPI_Isend(part.send, static_cast<int>(part.sendBytes), MPI_BYTE,
                         rank, dataTag, channel.collectiveComm, &mine[1]),
               "MPI_Isend");
  }

  /// Posts peer `k`'s header (with the payload, or its direct data on the
  /// group's second tag, posted before the header).
  void postWithHeader(size_t k) {
    MPI_Request *mine = &requests[stride * k];
    int rank = commRank(peers[k]);
    MessageHeader header{headerMagic, sequence, signature,
                         static_cast<uint64_t>(x.sendBytes[k])};
    std::memcpy(buffers.send[k].data(), &header, headerBytes);
    // No header from an earlier call may pass for this one's.
    std::memset(buffers.receive[k].data(), 0, headerBytes);
    auto postHeader = [&] {
      return accepted(MPI_Isend(buffers.send[k].data(),
                                static_cast<int>(buffers.send[k].size()),
                                MPI_BYTE, rank, channel.tag, channel.comm,
                                &mine[1]),
                      "MPI_Isend");
    };
    if (!accepted(MPI_Irecv(buffers.receive[k].data(),
                            static_cast<int>(buffers.receive[k].size()),
                            MPI_BYTE, rank, channel.tag, channel.comm,
                            &mine[0]),
                  "MPI_Irecv"))
      return;
    if (!direct) {
      postHeader();
      return;
    }
    // The data on its own tag, sent before the header: its rendezvous
    // starts first and the small header travels during it (measured in
    // docs/Distributed.md).
    const DirectPart &part = (*direct)[k];
    if (part.receiveBytes > 0 &&
        !accepted(MPI_Irecv(part.receive, static_cast<int>(part.receiveBytes),
                            MPI_BYTE, rank, channel.tag + 1, channel.comm,
                            &mine[2]),
                  "MPI_Irecv"))
      return;
    if (part.sendBytes > 0 &&
        !accepted(MPI_Isend(part.send, static_cast<int>(part.sendBytes),
                            MPI_BYTE, rank, channel.tag + 1, channel.comm,
                            &mine[3]),
                  "MPI_Isend"))
      return;
    postHeader();
  }

  /// Words a stall from the indices of the pending requests, naming each
  /// rank once (a peer's header and data are two requests).
  std::string describeStall(const std::vector<int> &pending) const {
    std::string text;
    std::vector<int> named;
    auto name = [&](int index, const char *what) {
      int rank = peers[static_cast<size_t>(index) / stride];
      if (std::find(named.begin(), named.end(), rank) != named.end())
        return;
      named.push_back(rank);
      text += std::string(text.empty() ? "" : "; ") + "rank " +
              std::to_string(rank) + " (devices " + self.devicesOfRank(rank) +
              ") " + what;
    };
    for (int index : pending)
      if (index % 2 == 0)
        name(index, "did not send its part");
    if (text.empty())
      for (int index : pending)
        name(index, "did not take its part");
    return text + " (this is rank " + std::to_string(x.me) + ")";
  }

  /// The world ranks that the pending requests wait for.
  std::vector<int> ranksOf(const std::vector<int> &pending) const {
    std::vector<int> ranks;
    for (int index : pending)
      ranks.push_back(peers[static_cast<size_t>(index) / stride]);
    return ranks;
  }

  /// Whether peer k's header receive has completed (or failed), testing
  /// it. A peer that made another call: its header says so, once its
  /// receive completed (or failed, as when its longer message was
  /// truncated: the first bytes, the header, are there).
  bool headerIn(size_t k) {
    MPI_Request &receive = requests[stride * k];
    if (receive == MPI_REQUEST_NULL)
      return true;
    int done = 0;
    std::lock_guard<std::mutex> guard(mpi.lock);
    MPI_Test(&receive, &done, MPI_STATUS_IGNORE);
    return done || receive == MPI_REQUEST_NULL;
  }

  /// The error for peer `k`, which made call `peerSequence` differently.
  Status differentCall(size_t k, uint64_t peerSequence) const {
    return Status::error(x.what() + ": rank " + std::to_string(peers[k]) +
                         " made a different collective as call #" +
                         std::to_string(peerSequence) +
                         " on this group (the processes disagree on the "
                         "program)");
  }

  /// With a data tag: a peer whose data has not arrived but whose first
  /// unmatched message here has another tag made another call (its
  /// messages on the group's communicator are matched in order;
  /// collectives' own messages are not seen by MPI_ANY_TAG). A receive
  /// already matched may still wait for the end of its transfer while the
  /// peer, its send done, has posted its next call: so only a suspicion
  /// that outlasts kSuspicion of polling (which ends such transfers
  /// within microseconds) is reported, or any once the wait has failed.
  /// Probed at most every 100 us while the wait is idle.
  Status probe() {
    constexpr auto kSuspicion = std::chrono::milliseconds(2);
    Clock::time_point now = Clock::now();
    if (!failedAlready && now - lastProbe < std::chrono::microseconds(100))
      return Status::success();
    lastProbe = now;
    bool suspected = false;
    for (size_t k = 0; k < peers.size(); ++k) {
      if (requests[stride * k] == MPI_REQUEST_NULL)
        continue;
      int found = 0;
      MPI_Status status;
      {
        std::lock_guard<std::mutex> guard(mpi.lock);
        MPI_Iprobe(commRank(peers[k]), MPI_ANY_TAG, channel.collectiveComm,
                   &found, &status);
      }
      if (!found || status.MPI_TAG == dataTag)
        continue;
      suspected = true;
      if (failedAlready || (suspectedAt != Clock::time_point() &&
                            now - suspectedAt >= kSuspicion))
        return differentCall(k, sequence);
    }
    if (!suspected)
      suspectedAt = Clock::time_point();
    else if (suspectedAt == Clock::time_point())
      suspectedAt = now;
    return Status::success();
  }

  /// A peer that made another call, found by probing (with a data tag) or
  /// by the headers that have arrived.
  Status disagreement() {
    if (dataTag) {
      failedAlready = true;
      return probe();
    }
    for (size_t k = 0; k < peers.size(); ++k) {
      if (!headerIn(k))
        continue;
      MessageHeader header;
      std::memcpy(&header, buffers.receive[k].data(), headerBytes);
      if (header.magic != headerMagic || header.sequence != sequence ||
          header.signature != signature ||
          header.payloadBytes != static_cast<uint64_t>(x.receiveBytes[k]))
        return differentCall(k, header.sequence);
    }
    return Status::success();
  }

  /// Gives the headers still on the way a moment after a failed wait. A
  /// direct exchange's headers follow their data: a peer that made
  /// another call (its data truncated here) has sent its header too.
  void awaitLateHeaders() {
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(100);
    for (bool pending = true; pending && Clock::now() < deadline;) {
      pending = false;
      for (size_t k = 0; k < peers.size(); ++k)
        pending |= !headerIn(k);
      if (pending)
        std::this_thread::yield();
    }
  }

  MpiCommunicator &self;
  Exchange &x;
  Channel &channel;
  uint64_t sequence, signature;
  const std::vector<DirectPart> *direct;
  int dataTag;
  const std::vector<int> &peers;
  ChannelBuffers &buffers;
  size_t stride;
  std::vector<MPI_Request> &requests;
  MpiProcess::Impl &mpi = self.process.impl();
  /// The first request that MPI refused.
  Status posted = Status::success();
  /// probe()'s state.
  Clock::time_point lastProbe, suspectedAt;
  bool failedAlready = false;
};

Status MpiCommunicator::transfer(Exchange &x, Channel &channel,
                                 uint64_t sequence, uint64_t signature,
                                 const std::vector<DirectPart> *direct,
                                 int dataTag) {
  Transfer transfer(*this, x, channel, sequence, signature, direct, dataTag);
  if (Status posted = transfer.post(); !posted) {
    transfer.takeBackReceives();
    return Status::error(x.what() + ": " + posted.message());
  }
  if (x.ownBlock.bytes > 0) {
    std::memcpy(x.ownBlock.to, x.ownBlock.from,
                static_cast<size_t>(x.ownBlock.bytes));
    x.ownBlock.bytes = 0;
  }
  return transfer.wait();
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
