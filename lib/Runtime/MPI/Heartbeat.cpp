//===- Heartbeat.cpp - Every process hears from every other ---------------===//
//
// Collectives notice a rank that stops only when they wait for it; a rank
// computing for minutes without a cross-process exchange would not. The
// heartbeat thread sends a sequence number to every other process a few
// times per timeout on its own communicator and receives theirs; a peer
// silent for the whole timeout fails this process with a message naming
// it. A process that ends normally sends a goodbye (-1) and keeps
// receiving until every peer said goodbye too, so no peer waits for beats
// that will not come and no message is left unreceived at MPI_Finalize.
// docs/Distributed.md, "Failure behaviour".
//
//===----------------------------------------------------------------------===//
#include "MpiInternal.h"

#include <algorithm>

namespace partita {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int64_t kGoodbye = -1;
} // namespace

struct Heartbeat::Peer {
  MPI_Request receive = MPI_REQUEST_NULL;
  MPI_Request send = MPI_REQUEST_NULL;
  int64_t received = 0;
  /// The value in flight to this peer: on the heap, so that a send still
  /// pending at shutdown can keep it (Impl::abandoned) past MPI_Finalize.
  std::shared_ptr<std::vector<int64_t>> sent =
      std::make_shared<std::vector<int64_t>>(1, 0);
  Clock::time_point lastHeard;
  bool saidGoodbye = false;
};

Heartbeat::Heartbeat(MpiProcess::Impl &mpi, MPI_Comm comm,
                     std::chrono::milliseconds timeout, FailureHandler fail)
    : mpi(mpi), comm(comm), timeoutMs(timeout.count()), fail(std::move(fail)),
      peers(mpi.size) {
  Clock::time_point now = Clock::now();
  for (Peer &peer : peers)
    peer.lastHeard = now;
  peers[mpi.rank].saidGoodbye = true; // never waited for
  thread = std::thread([this] { beat(); });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> guard(stopLock);
    stopping = true;
  }
  stopSignal.notify_all();
  thread.join();
}

void Heartbeat::setTimeout(std::chrono::milliseconds timeout) {
  timeoutMs.store(timeout.count());
}

std::chrono::milliseconds Heartbeat::interval() const {
  auto quarter = std::chrono::milliseconds(timeoutMs.load() / 4);
  return std::clamp(quarter, std::chrono::milliseconds(1),
                    std::chrono::milliseconds(1000));
}

Status Heartbeat::exchange(bool goodbye) {
  Clock::time_point asked = Clock::now();
  std::lock_guard<std::mutex> guard(mpi.lock);
  Clock::time_point now = Clock::now();
  // The main thread held the lock (a blocking MPI call such as a
  // communicator split): nothing could be heard meanwhile, so that time
  // counts as no one's silence.
  if (now - asked > interval())
    for (Peer &peer : peers)
      peer.lastHeard = std::max(peer.lastHeard, now - interval());
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    if (r == mpi.rank)
      continue;
    Peer &peer = peers[r];
    // Everything that arrived, oldest first (MPI keeps one sender's
    // messages in order on a communicator and tag).
    while (!peer.saidGoodbye) {
      if (peer.receive == MPI_REQUEST_NULL)
        PARTITA_MPI_CHECK(MPI_Irecv(&peer.received, 1, MPI_INT64_T, r, 0,
                                    comm, &peer.receive));
      int arrived = 0;
      PARTITA_MPI_CHECK(MPI_Test(&peer.receive, &arrived, MPI_STATUS_IGNORE));
      if (!arrived)
        break;
      peer.lastHeard = now;
      peer.saidGoodbye = peer.received == kGoodbye;
    }
    if (peer.send != MPI_REQUEST_NULL) {
      int done = 0;
      PARTITA_MPI_CHECK(MPI_Test(&peer.send, &done, MPI_STATUS_IGNORE));
    }
    // One beat in flight per peer; the goodbye goes once the last beat
    // has left.
    int64_t &value = peer.sent->front();
    if (peer.send == MPI_REQUEST_NULL && value != kGoodbye) {
      value = goodbye ? kGoodbye : value + 1;
      PARTITA_MPI_CHECK(
          MPI_Isend(&value, 1, MPI_INT64_T, r, 0, comm, &peer.send));
    }
  }
  return Status::success();
}

std::chrono::milliseconds Heartbeat::silenceLimit() const {
  // Two intervals longer than the timeout: a wait for the same peer that
  // started about when it stopped fails first, with the message naming the
  // op (the last beat may have come up to an interval before the stop).
  return std::chrono::milliseconds(timeoutMs.load()) + 2 * interval();
}

bool Heartbeat::beating(int rank) const {
  const Peer &peer = peers[static_cast<size_t>(rank)];
  // A beat comes every interval and is read every interval: three cover
  // the jitter of both.
  return !peer.saidGoodbye && Clock::now() - peer.lastHeard <= 3 * interval();
}

std::chrono::milliseconds Heartbeat::patience() const {
  return silenceLimit() + interval();
}

int Heartbeat::silentPeer() const {
  Clock::time_point now = Clock::now();
  std::chrono::milliseconds limit = silenceLimit();
  for (int r = 0; r < static_cast<int>(peers.size()); ++r)
    if (!peers[r].saidGoodbye && now - peers[r].lastHeard > limit)
      return r;
  return -1;
}

void Heartbeat::beat() {
  // Beat until asked to stop; a silent peer or an MPI error fails the
  // process (fail() exits it; should it return, beating ends there).
  for (;;) {
    if (Status status = exchange(/*goodbye=*/false); !status) {
      fail("heartbeat: " + status.message());
      return;
    }
    if (int silent = silentPeer(); silent >= 0) {
      fail("rank " + std::to_string(silent) + " sent no heartbeat for " +
           std::to_string(silenceLimit().count()) +
           " ms: it died, was stopped or cannot be reached (this is rank " +
           std::to_string(mpi.rank) + ")");
      return;
    }
    std::unique_lock<std::mutex> guard(stopLock);
    if (stopSignal.wait_for(guard, interval(), [this] { return stopping; }))
      break;
  }
  // Goodbye, then hear every peer's: a peer silent for the timeout now is
  // past caring (the run is over here), so it is left without an error.
  for (;;) {
    if (!exchange(/*goodbye=*/true))
      break;
    bool heardAll = std::all_of(peers.begin(), peers.end(), [](const Peer &p) {
      return p.saidGoodbye;
    });
    bool sentAll = std::all_of(peers.begin(), peers.end(), [](const Peer &p) {
      return p.send == MPI_REQUEST_NULL;
    });
    if ((heardAll && sentAll) || silentPeer() >= 0)
      break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::lock_guard<std::mutex> guard(mpi.lock);
  for (Peer &peer : peers) {
    if (peer.receive != MPI_REQUEST_NULL) {
      MPI_Cancel(&peer.receive);
      MPI_Wait(&peer.receive, MPI_STATUS_IGNORE);
    }
    if (peer.send != MPI_REQUEST_NULL) {
      // Still in flight to a peer that went silent: its value is kept
      // until the process ends.
      mpi.abandoned.push_back(peer.sent);
      MPI_Request_free(&peer.send);
    }
  }
}

} // namespace partita
