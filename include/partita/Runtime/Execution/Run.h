//===- Run.h - Running a program on devices ---------------------*- C++ -*-===//
//
// Running an Executable: one device's instruction loop over a backend and a
// communicator, every device of a mesh as threads of this process, the
// stepwise run a training loop drives, and the blocks each device is given
// and gives back. The Execution room of the runtime (docs/Overview.md).
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_EXECUTION_RUN_H
#define PARTITA_RUNTIME_EXECUTION_RUN_H

#include "partita/Runtime/Communication/Communicator.h"
#include "partita/Runtime/Program/Executable.h"
#include "partita/Runtime/Program/Timeline.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace partita {

class Backend;

/// Runs `program` as device `deviceId`: `inputs` are this device's local
/// blocks (one per program input), `outputs` receive its local results.
/// Collectives go through `communicator` (may be null for a program
/// without collectives); buffers and kernels through `backend` (null: the
/// CPU backend). A failing device aborts the communicator.
Status runOnDevice(const Executable &program, int64_t deviceId,
                   Communicator *communicator,
                   const std::vector<HostArray> &inputs,
                   std::vector<HostArray> &outputs, Backend *backend = nullptr);

/// Where one run of a device's program went, in seconds, measured on the
/// host (exact for the CPU backend; for an asynchronous backend, kernels
/// count their launch only):
///   * computing: in kernels;
///   * communicating: collectives in flight, each from its start to the
///     moment its data was complete (for a collective that runs where it
///     stands, the call);
///   * exposed: the part of that the device spent inside collective calls
///     instead of computing (all of it without overlap);
///   * waiting: of the calls, the time spent waiting for other devices
///     (what the communicator measures on the calling thread).
struct StepTimes {
  double computing = 0, communicating = 0, waiting = 0, exposed = 0;
};

/// "time per step on device D: computing ... ms, communicating ... ms,
/// exposed ... ms (waiting for other devices ... ms)": medians of `steps`
/// (device `device`'s runs), ending in a newline; empty when there are
/// none.
std::string describeStepTimes(const std::vector<StepTimes> &steps,
                              int64_t device = 0);

/// runOnDevice() running the instructions `repeats` times on inputs
/// uploaded once, appending each run's wall time (backend synchronized) to
/// `stepSeconds` and where it went to `stepTimes` when given, and
/// recording the last run's spans into `timeline` when given.
Status runOnDeviceRepeated(const Executable &program, int64_t deviceId,
                           Communicator *communicator,
                           const std::vector<HostArray> &inputs,
                           std::vector<HostArray> &outputs, Backend *backend,
                           int repeats, std::vector<double> *stepSeconds,
                           std::vector<StepTimes> *stepTimes = nullptr,
                           DeviceTimeline *timeline = nullptr);

/// Device `deviceId`'s block of program input `index`: a block the caller
/// holds, or `made`, which the feed fills (a block made on the device's
/// thread and let go once on the device). When the device's memory is
/// host memory `into` is the input's buffer: the feed may write the block
/// there itself and return null.
using DeviceInputFeed = std::function<Expected<const HostArray *>(
    size_t index, HostArray &made, void *into)>;

/// runOnDeviceRepeated() with each input block from `feed`, one at a time.
Status runOnDeviceFed(const Executable &program, int64_t deviceId,
                      Communicator *communicator, const DeviceInputFeed &feed,
                      std::vector<HostArray> &outputs, Backend *backend,
                      int repeats, std::vector<double> *stepSeconds,
                      std::vector<StepTimes> *stepTimes = nullptr,
                      DeviceTimeline *timeline = nullptr);

/// Measured figures of a run (and how many times to run).
struct RunStatistics {
  /// The most device memory any one device held at once.
  int64_t peakBytesPerDevice = 0;
  /// In: run the program this many times on inputs uploaded once (a
  /// steady-state timing; a program that updates donated inputs in place
  /// sees its own updates from the second run on, and the outputs are the
  /// last run's).
  int repeats = 1;
  /// Out: the first device's wall time per run, backend synchronized.
  std::vector<double> stepSeconds;
  /// Out: where the first device's runs went.
  std::vector<StepTimes> stepTimes;
  /// In: record every device's spans of the last run into `timelines`
  /// (one per device run, in the order of the devices run).
  bool recordTimelines = false;
  std::vector<DeviceTimeline> timelines;
};

/// How a partial-sum input's value is split over its partial group:
/// random addends (what a test wants: every member's block matters), or
/// the whole value on the group's first member and zeros on the others
/// (exact: what feeding a computed value back wants).
enum class PartialInputs { RandomAddends, FirstMember };

/// The local blocks of program input `index` for every device (indexed by
/// device id), from its global value, as deviceInputBlocks() makes them.
Expected<std::vector<HostArray>>
inputBlocksByDevice(const Executable &program, size_t index,
                    const HostArray &global,
                    PartialInputs policy = PartialInputs::RandomAddends);

/// Every device's local input blocks (indexed by device id, then by program
/// input) of `globalInputs`, sliced by each input's sharding; a partial-sum
/// input is split into random addends over its partial group
/// (deterministic; they sum to the global value up to rounding) and a
/// partial max/min input is given whole to every device.
Expected<std::vector<std::vector<HostArray>>>
deviceInputBlocks(const Executable &program,
                  const std::vector<HostArray> &globalInputs,
                  PartialInputs policy = PartialInputs::RandomAddends);

/// Makes device `deviceId`'s backend, on the thread that will drive it
/// (a GPU backend binds its device to that thread).
using BackendFactory =
    std::function<Expected<std::unique_ptr<Backend>>(int64_t deviceId)>;

/// Runs `program` on `devices` (device ids), one thread each, with
/// `communicator`; `inputsByDevice` and `outputsByDevice` are indexed by
/// device id (entries of devices not run are ignored / left empty). Each
/// thread's backend comes from `makeBackend` (default: the CPU backend); a
/// device whose backend cannot be made aborts the communicator. The status
/// is the first device's failure that is not merely an abort caused by
/// another device.
Status
runDevicesAsThreads(const Executable &program,
                    const std::vector<int64_t> &devices,
                    Communicator *communicator,
                    const std::vector<std::vector<HostArray>> &inputsByDevice,
                    std::vector<std::vector<HostArray>> &outputsByDevice,
                    RunStatistics *statistics = nullptr,
                    const BackendFactory &makeBackend = {});

/// Device `device`'s block of program input `index`, as DeviceInputFeed.
using DevicesInputFeed = std::function<Expected<const HostArray *>(
    size_t index, int64_t device, HostArray &made, void *into)>;

/// runDevicesAsThreads() with each device's input blocks from `feed`,
/// called on the device's thread.
Status runDevicesAsThreads(const Executable &program,
                           const std::vector<int64_t> &devices,
                           Communicator *communicator,
                           const DevicesInputFeed &feed,
                           std::vector<std::vector<HostArray>> &outputsByDevice,
                           RunStatistics *statistics = nullptr,
                           const BackendFactory &makeBackend = {});

/// A run of `steps` steps of one program on CPU device threads that stay
/// up between steps, with the caller's thread in between (a training loop):
/// each device uploads every input once, then per step only what `before`
/// hands it, and downloads only `readEachStep`; values that carry over stay
/// in device memory. All callbacks run on the caller's thread, while the
/// devices wait.
struct StepwiseRun {
  int64_t steps = 1;
  /// Before step `step`: inputs to upload, per device id, as (program
  /// input index, block) pairs. The others keep their device values.
  std::function<Status(
      int64_t step,
      std::vector<std::vector<std::pair<size_t, HostArray>>> &uploads)>
      before;
  /// Program outputs every device downloads after each step, and what is
  /// done with them (`outputsByDevice[d][k]` is readEachStep[k]'s block).
  std::vector<size_t> readEachStep;
  std::function<Status(int64_t step,
                       std::vector<std::vector<HostArray>> &outputsByDevice)>
      after;
  /// Set by `after` to end the run after this step, before `steps` (a
  /// generation whose every row is done).
  bool stopped = false;
  /// (output, input) pairs: after each step the output's value becomes the
  /// input's on the device (nothing to do when the buffer plan updates the
  /// input in place).
  std::vector<std::pair<size_t, size_t>> carried;
  /// Program inputs every device downloads when the run ends, however it
  /// ends once the devices are up: `finalInputs[d][k]` is readAtEnd[k]'s.
  std::vector<size_t> readAtEnd;
  std::vector<std::vector<HostArray>> finalInputs;
  /// Whether the `readAtEnd` inputs are downloaded when the run ends (else
  /// only into snapshots).
  bool downloadAtEnd = true;
  /// Steps after which every device also downloads the `readAtEnd` inputs
  /// into `snapshots[d]` before `after` runs (checkpoints). Called on the
  /// device threads: a pure function of the step.
  std::function<bool(int64_t step)> snapshotAfter;
  std::vector<std::vector<HostArray>> snapshots;
  /// The step whose spans every device records into `timelines[d]`, or -1.
  int64_t timelineStep = -1;
  std::vector<DeviceTimeline> timelines;
  /// The devices this process runs (empty: every device of the mesh) and
  /// their communicator (null: the in-process one over the mesh). Every
  /// per-device vector stays indexed by device id over the whole mesh; the
  /// entries of devices not run are left empty.
  std::vector<int64_t> devices;
  Communicator *communicator = nullptr;
};

/// Runs `run` on every device of `program`'s mesh (CPU backends, the
/// in-process communicator); `inputsByDevice` as runDevicesAsThreads's,
/// each device's blocks released once on the device (the devices share
/// the host's memory: held beside the device's copy they would double the
/// state). When the run ends the devices download their `readAtEnd`
/// inputs and free their memory one at a time, so the downloads never sit
/// beside every device's buffers. The first failure — a device's, or a
/// callback's — stops the run and is returned.
Status runDevicesStepwise(const Executable &program,
                          std::vector<std::vector<HostArray>> &&inputsByDevice,
                          StepwiseRun &run);

/// The global outputs from every device's output blocks (indexed by device
/// id): replicas must agree bit for bit, partial sums are summed.
Expected<std::vector<HostArray>>
assembleOutputs(const Executable &program,
                const std::vector<std::vector<HostArray>> &outputsByDevice);

/// Runs `program` on every device of its mesh as threads of this process
/// with the in-process communicator: slices each global input by its
/// sharding, runs, and assembles the global outputs (checking that
/// replicas agree). A partial-sum input is split into random addends over
/// its partial group (deterministic; they sum to the global value up to
/// rounding); a partial max/min input is given whole to every device.
Expected<std::vector<HostArray>>
runOnCpuDevices(const Executable &program,
                const std::vector<HostArray> &globalInputs,
                RunStatistics *statistics = nullptr,
                PartialInputs policy = PartialInputs::RandomAddends);

} // namespace partita

#endif // PARTITA_RUNTIME_EXECUTION_RUN_H
