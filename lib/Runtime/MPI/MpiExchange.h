//===- MpiExchange.h - How a cross-process collective's data moves -*- C++ -*-===//
//
// Private to lib/Runtime/MPI: what a cross-process group's leader exchanges
// with the other processes (MpiCommunicator.cpp runs the rendezvous, the
// channels and the waiting): the messages per collective kind — each
// checked by a header, or by its tag (a direct message) — and, where a
// layout allows, MPI's own collective instead.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_LIB_RUNTIME_MPI_MPIEXCHANGE_H
#define PARTITA_LIB_RUNTIME_MPI_MPIEXCHANGE_H

#include "MpiInternal.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace partita {
namespace mpi_exchange {

using Clock = std::chrono::steady_clock;

inline constexpr uint64_t headerMagic = 0x5041525449544131ULL; // "PARTITA1"

struct MessageHeader {
  uint64_t magic;
  uint64_t sequence;
  uint64_t signature;
  uint64_t payloadBytes;
};

/// `hash` with `word` mixed in: xor, multiply by an odd constant, fold the
/// high half down so every bit of a word reaches the next ones.
inline uint64_t mixWord(uint64_t hash, uint64_t word) {
  hash = (hash ^ word) * 0x9E3779B97F4A7C15ULL;
  return hash ^ (hash >> 32);
}

/// A hash of what two processes must agree on for a call: everything
/// describeCollective() says and the group's members, hashed as numbers
/// (no text is built on the way).
inline uint64_t callSignature(const CollectiveCall &call,
                              const std::vector<int64_t> &members) {
  // A word at a time (a byte at a time was a chain of ~120 dependent
  // multiplications per call).
  uint64_t hash = 1469598103934665603ULL;
  auto mix = [&](uint64_t word) { hash = mixWord(hash, word); };
  mix(static_cast<uint64_t>(call.kind));
  mix(static_cast<uint64_t>(call.reduction));
  for (const std::string &axis : call.axes) {
    mix(axis.size());
    for (unsigned char c : axis)
      mix(c);
  }
  mix(static_cast<uint64_t>(call.dim));
  mix(static_cast<uint64_t>(call.splitDim));
  mix(static_cast<uint64_t>(call.concatDim));
  mix(call.pairs.size());
  for (const auto &[from, to] : call.pairs) {
    mix(static_cast<uint64_t>(from));
    mix(static_cast<uint64_t>(to));
  }
  mix(static_cast<uint64_t>(call.input.dtype));
  mix(call.input.shape.size());
  for (int64_t extent : call.input.shape)
    mix(static_cast<uint64_t>(extent));
  mix(members.size());
  for (int64_t member : members)
    mix(static_cast<uint64_t>(member));
  return hash;
}

/// One peer's data in a direct exchange: sent from and received into the
/// members' own buffers (or this process's staged block), never copied
/// into a message buffer.
struct DirectPart {
  const uint8_t *send = nullptr;
  int64_t sendBytes = 0;
  uint8_t *receive = nullptr;
  int64_t receiveBytes = 0;
};

/// Message buffers of one group, kept from call to call: a fresh
/// megabyte-sized buffer costs more in page faults than the copy into it.
/// Calls on one group never overlap (a call's leader starts only after
/// every local member has left the previous call), so one set suffices.
struct ChannelBuffers {
  std::vector<std::vector<uint8_t>> send, receive; // Per peer, header first.
  std::vector<uint8_t> reduced;
  /// reduce_scatter through MPI: this process's blocks.
  std::vector<uint8_t> scattered;
  /// A direct reduce_scatter: each peer's block of this process's share.
  std::vector<std::vector<uint8_t>> blocks;
  /// The working lists of one call (Exchange's), kept so that a call
  /// allocates nothing once its group has made one like it.
  std::vector<int64_t> zeros, box, sendBytes, receiveBytes;
  std::vector<DirectPart> parts;
  std::vector<MPI_Request> requests;
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

/// Where a group's members live, as this process sees them: the same for
/// every call on the group, so worked out once per group and call site
/// (MpiCommunicator's plans) rather than per call.
struct GroupPlacement {
  /// The process of each group position.
  std::vector<int> processOf;
  /// The positions this process drives.
  std::vector<int64_t> mine;
  /// The channel's processes but this one.
  std::vector<int> peers;
};

GroupPlacement placeGroup(const std::vector<int64_t> &members,
                          const std::vector<int> &processes,
                          const ProcessLayout &layout);

/// One collective of a cross-process group, as seen by this process.
struct Slot {
  CollectiveCall request;
  /// The group's placement (owned by the communicator's plan).
  const GroupPlacement *placement = nullptr;
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

inline constexpr size_t headerBytes = sizeof(MessageHeader);

/// One cross-process collective as this process's leader sees it: shapes,
/// where each member lives, and the messages to and from every peer.
struct Exchange {
  Exchange(Slot &slot, const Channel &channel, const ProcessLayout &layout,
           std::function<std::string()> describe)
      : slot(slot), request(slot.request), describe(std::move(describe)),
        groupSize(static_cast<int64_t>(slot.members.size())),
        inShape(request.input.shape),
        // The call was checked: its output has the result's shape.
        outShape(request.output.shape),
        elementSize(dtypeSize(request.input.dtype)),
        inBytes(*checkedNumBytes(request.input.dtype, inShape)),
        outBytes(*checkedNumBytes(request.input.dtype, outShape)),
        count(*checkedNumElements(inShape)), zeros(channel.buffers->zeros),
        me(layout.rank), processOf(slot.placement->processOf),
        mine(slot.placement->mine), processes(channel.processes),
        peers(slot.placement->peers), box(channel.buffers->box),
        buffers(*channel.buffers), sendBytes(buffers.sendBytes),
        receiveBytes(buffers.receiveBytes) {
    zeros.assign(inShape.size(), 0);
    box.assign(inShape.begin(), inShape.end());
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
  /// The index of world rank `rank` among the channel's processes.
  int64_t processIndex(int rank) const {
    return static_cast<int64_t>(
        std::lower_bound(processes.begin(), processes.end(), rank) -
        processes.begin());
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

  /// The call and its group, for messages (built only for one).
  std::string what() const { return describe(); }

  Slot &slot;
  const CollectiveCall &request;
  std::function<std::string()> describe;
  int64_t groupSize;
  const std::vector<int64_t> &inShape;
  const std::vector<int64_t> &outShape;
  int64_t elementSize, inBytes, outBytes, count;
  std::vector<int64_t> &zeros;
  int me;
  /// The process of each group position.
  const std::vector<int> &processOf;
  /// The positions this process drives.
  const std::vector<int64_t> &mine;
  /// The channel's processes (ascending world ranks), and all but this one.
  const std::vector<int> &processes;
  const std::vector<int> &peers;
  /// all_to_all: the block one member sends another.
  std::vector<int64_t> &box;
  int64_t boxBytes = 0;
  /// A direct all_reduce: this process's input (its members' reduced).
  const uint8_t *localInput = nullptr;
  /// Per peer, the message buffers (header first) and the payload sizes.
  ChannelBuffers &buffers;
  std::vector<int64_t> &sendBytes, &receiveBytes;
  /// A direct all_gather's or all_to_all's own block, copied once the
  /// messages are posted (transfer()), so that the peers' reads of this
  /// process's data start first and run beside the copy.
  struct {
    const uint8_t *from = nullptr;
    uint8_t *to = nullptr;
    int64_t bytes = 0;
  } ownBlock;
};

/// The two steps of a collective kind around the transfer.
struct KindSteps {
  /// Writes every peer's payload.
  Status (*pack)(Exchange &);
  /// Writes every local member's output from the inputs here and the
  /// payloads received.
  Status (*write)(Exchange &);
};

/// The steps of `kind` (null members for an unknown kind).
KindSteps stepsOf(CommunicatorOp kind);

/// How many payload bytes go to and come from each peer.
void planPayloads(Exchange &x);

/// Whether `x` is a float sum whose addends must be added in group order,
/// as one process adds them (so that any process count gives the bits of
/// one process): some process holds several members, or more than two
/// processes do not ascend along the group. Its members' inputs then travel
/// unreduced, point to point (docs/Distributed.md, "Sums in group order").
bool keepsMemberOrder(const Exchange &x);

/// Whether `x` runs as one of MPI's own collectives (MpiExchange.cpp says
/// which layouts and types).
bool fitsMpiCollective(const Exchange &x);

/// Starts MPI's collective for `x` on `comm` (under `mpiLock`): this
/// process's members reduced or packed first where needed.
Status startMpiCollective(Exchange &x, MPI_Comm comm, std::mutex &mpiLock,
                          MPI_Request &request);

/// After the collective: every local member's output.
void finishMpiCollective(Exchange &x);

/// Whether `x` moves its data directly, one message per peer beside its
/// header: all_gather, reduce_scatter and all_to_all of at least 4 KiB
/// per member, in the layouts MPI's collectives take (fitsMpiCollective
/// but for its size). Each process sends every other
/// the bytes a ring would send in all, so no bandwidth is lost, and
/// OpenMPI's non-blocking all_gather and reduce_scatter (its libnbc
/// schedules) took 2 to 4 times the time of these messages.
bool fitsDirect(const Exchange &x);

/// Stages this process's block where needed (several members, or an
/// input that is the output), records its own share of the result in
/// x.ownBlock (copied by the transfer once the messages are posted), and
/// sets each peer's part, in the order of x.peers, in x.buffers.parts.
Status startDirect(Exchange &x);

/// After the messages: the received blocks reduced in rank order
/// (reduce_scatter) and every local member's output.
Status finishDirect(Exchange &x);

/// Whether the all_reduce `x` moves as two rounds of direct messages: its
/// elements cut into one slice per process; round 1 sends slice q of this
/// process's input (its members' reduced) to process q, which reduces
/// its slice in rank order; round 2 sends every reduced slice to every
/// process. Each process sends what a ring would in all (2 (P-1)/P of
/// the input), and every replica gets the same bits. From 32 to 256 KiB,
/// where it beat OpenMPI's non-blocking all_reduce (MpiExchange.cpp).
bool fitsDirectAllReduce(const Exchange &x);

/// Round 1 of a direct all_reduce: each peer's slice of this process's
/// input, and each peer's part of this process's slice into a buffer.
Status startDirectAllReduce(Exchange &x);

/// Between the rounds: this process's slice reduced in rank order into
/// the first local member's output; sets round 2's parts (that slice to
/// every peer, each peer's slice into its place in the output).
Status reduceDirectAllReduceSlice(Exchange &x);

} // namespace mpi_exchange
} // namespace partita

#endif // PARTITA_LIB_RUNTIME_MPI_MPIEXCHANGE_H
