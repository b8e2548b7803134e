//===- Calibrate.cpp - Measuring this machine for the planner -------------===//
//
// Runs probe programs on N emulated CPU devices (the runtime `partita
// train` uses, every device busy at once): the cost of dispatching an
// instruction, einsum and elementwise throughput, and for each collective
// kind and group size a latency and a bandwidth fitted from a small and a
// large call (docs/Planning.md, "Calibration"). Each probe is a loop
// inside a manual computation, timed at two trip counts: the difference
// per trip is the body's cost without the step's fixed costs.
//
//===----------------------------------------------------------------------===//

#include "partita/Planning/Calibrate.h"

#include "partita/Codegen/LowerToExecutable.h"
#include "partita/Driver/Session.h"
#include "partita/Planning/StepCost.h"
#include "partita/Runtime/Execution/Run.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace partita;

namespace {

/// A probe: a loop of `trips` iterations of `body` on a carried
/// rows x cols f32 block per device, inside a manual computation over a
/// mesh of N devices whose last axis "b" has `group` devices.
struct Probe {
  int64_t devices = 8, group = 8;
  int64_t rows = 8, cols = 8;
  /// The loop body; %acc is the carried block, %c a 0.5 constant and %x
  /// the device's input block, each rows x cols; it must end by
  /// yielding the same type.
  std::string body;
  /// Constants other than %c the body uses, in the region before the loop.
  std::string prologue;
};

std::string tensorType(int64_t rows, int64_t cols) {
  return "tensor<" + std::to_string(rows) + "x" + std::to_string(cols) +
         "xf32>";
}

std::string probeText(const Probe &p, int64_t trips) {
  std::string mesh = p.group == p.devices
                         ? "[\"b\"=" + std::to_string(p.group) + "]"
                         : "[\"a\"=" + std::to_string(p.devices / p.group) +
                               ", \"b\"=" + std::to_string(p.group) + "]";
  std::string axes = p.group == p.devices ? "{\"b\"}" : "{\"a\", \"b\"}";
  std::string manual = p.group == p.devices ? "[\"b\"]" : "[\"a\", \"b\"]";
  std::string local = tensorType(p.rows, p.cols);
  std::string global = tensorType(p.rows * p.devices, p.cols);
  std::string sharding = "<@mesh, [" + axes + ", {}]>";
  return "partita.mesh @mesh = <" + mesh + ">\n" +
         "func.func @probe(%in: " + global +
         " {partita.sharding = #partita.sharding" + sharding + "}) -> " +
         global + " {\n" + "  %r = partita.manual_computation(%in)\n" +
         "      in_shardings = [" + sharding + "]\n" +
         "      out_shardings = [" + sharding + "]\n" +
         "      manual_axes = " + manual + "\n" + "      (%x: " + local +
         ") {\n" + "    %c = partita.constant dense<0.5> : " + local + "\n" +
         p.prologue + "    %y = partita.loop " + std::to_string(trips) +
         " times (%i) iter_args(%acc = %x) : " + local + " {\n" + p.body +
         "    }\n" + "    partita.yield %y : " + local + "\n" + "  } : (" +
         global + ") -> " + global + "\n" + "  return %r : " + global + "\n}\n";
}

/// Median seconds per step of `program` on its devices.
Expected<double> secondsPerStep(const Executable &program, int64_t steps) {
  Expected<std::vector<HostArray>> inputs = randomInputs(program, 1);
  if (!inputs)
    return inputs.status();
  Expected<std::vector<std::vector<HostArray>>> blocks =
      deviceInputBlocks(program, *inputs);
  if (!blocks)
    return blocks.status();
  constexpr int64_t warm = 2;
  StepwiseRun run;
  run.steps = warm + steps;
  std::vector<double> times;
  std::chrono::steady_clock::time_point begin;
  run.before = [&](int64_t,
                   std::vector<std::vector<std::pair<size_t, HostArray>>> &) {
    begin = std::chrono::steady_clock::now();
    return Status::success();
  };
  run.after = [&](int64_t step, std::vector<std::vector<HostArray>> &) {
    if (step >= warm)
      times.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - begin)
                          .count());
    return Status::success();
  };
  if (Status status = runDevicesStepwise(program, std::move(*blocks), run);
      !status.ok())
    return status;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// One trip of a probe's body: its seconds (the step time at two trip
/// counts, their difference over the trips between them) and the work the
/// plan would count for it (the two programs' profiles, likewise).
struct Trip {
  double seconds = 0;
  StepProfile work;
};

/// `probe` at `trips` trips, compiled by the whole pipeline.
Expected<Executable> compileProbe(const Probe &probe, int64_t trips) {
  std::string text = probeText(probe, trips);
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  Session session(errorStream);
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModuleFromBuffer(
      session, llvm::MemoryBuffer::getMemBufferCopy(text, "probe"));
  PipelineOptions options;
  options.stage = Stage::Partitioned;
  if (!module || !runPipeline(session, *module, options))
    return Status::error(
        "a probe did not compile (an internal error): " + errors + "\n" + text);
  return lowerToExecutable(*module);
}

/// Median seconds of running `program` apart on its devices from global
/// inputs to global outputs, as a pipeline stage's action runs.
Expected<double> secondsPerLaunch(const Executable &program, int64_t runs) {
  Expected<std::vector<HostArray>> inputs = randomInputs(program, 1);
  if (!inputs)
    return inputs.status();
  std::vector<double> times;
  for (int64_t r = 0; r <= runs; ++r) {
    auto begin = std::chrono::steady_clock::now();
    Expected<std::vector<HostArray>> outputs =
        runOnCpuDevices(program, *inputs);
    if (!outputs)
      return outputs.status();
    if (r > 0) // the first warms the caches
      times.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - begin)
                          .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Expected<Trip> measureTrip(const Probe &probe, int64_t steps) {
  constexpr int64_t fewer = 8, more = 40;
  double seconds[2];
  StepProfile profiles[2];
  for (int which = 0; which < 2; ++which) {
    Expected<Executable> program = compileProbe(probe, which ? more : fewer);
    if (!program)
      return program.status();
    Expected<double> step = secondsPerStep(*program, steps);
    if (!step)
      return step.status();
    seconds[which] = *step;
    profiles[which] = profileExecutable(*program);
  }
  double trips = more - fewer;
  Trip trip;
  trip.seconds = std::max(seconds[1] - seconds[0], 0.0) / trips;
  const StepProfile &a = profiles[0], &b = profiles[1];
  trip.work.instructions = (b.instructions - a.instructions) / trips;
  trip.work.einsumFlops = (b.einsumFlops - a.einsumFlops) / trips;
  trip.work.elements = (b.elements - a.elements) / trips;
  for (const auto &[key, calls] : b.collectives) {
    auto before = a.collectives.find(key);
    StepProfile::Calls &per = trip.work.collectives[key];
    per.count = (calls.count -
                 (before == a.collectives.end() ? 0 : before->second.count)) /
                trips;
    per.bytes = (calls.bytes -
                 (before == a.collectives.end() ? 0 : before->second.bytes)) /
                trips;
  }
  return trip;
}

/// The body of a probe of `kind` on `rows` x `cols` blocks (the
/// collective's input is one such block), over the mesh's "b" axis of
/// `group` devices: the collective, then a multiply by %c so the carried
/// values stay finite.
Probe collectiveProbe(const std::string &kind, int64_t devices, int64_t group,
                      int64_t rows, int64_t cols) {
  Probe p{devices, group, rows, cols, "", ""};
  std::string t = tensorType(rows, cols);
  std::string axes = " on @mesh axes = [\"b\"]";
  std::string &b = p.body;
  if (kind == "all_reduce") {
    b += "      %v = partita.all_reduce sum %acc" + axes + " : " + t + "\n";
  } else if (kind == "all_gather") {
    std::string wide = tensorType(rows * group, cols);
    b += "      %g = partita.all_gather %acc" + axes + " dim = 0 : " + t +
         " -> " + wide + "\n";
    b += "      %v = partita.all_slice %g" + axes + " dim = 0 : " + wide +
         " -> " + t + "\n";
  } else if (kind == "reduce_scatter" || kind == "reduce_scatter_base") {
    // The input block is scattered into rows / group rows, gathered back
    // locally by a broadcast of the carried block's share; its baseline
    // takes the device's share with a local all_slice instead.
    std::string part = tensorType(rows / group, cols);
    if (kind == "reduce_scatter")
      b += "      %s = partita.reduce_scatter sum %acc" + axes +
           " dim = 0 : " + t + " -> " + part + "\n";
    else
      b += "      %s = partita.all_slice %acc" + axes + " dim = 0 : " + t +
           " -> " + part + "\n";
    b += "      %e = partita.reshape %s : " + part + " -> tensor<1x" +
         std::to_string(rows / group) + "x" + std::to_string(cols) + "xf32>\n";
    b += "      %f = partita.broadcast %e dims = [0, 1, 2] : tensor<1x" +
         std::to_string(rows / group) + "x" + std::to_string(cols) +
         "xf32> -> tensor<" + std::to_string(group) + "x" +
         std::to_string(rows / group) + "x" + std::to_string(cols) + "xf32>\n";
    b += "      %v = partita.reshape %f : tensor<" + std::to_string(group) +
         "x" + std::to_string(rows / group) + "x" + std::to_string(cols) +
         "xf32> -> " + t + "\n";
  } else if (kind == "all_to_all") {
    b += "      %v = partita.all_to_all %acc" + axes +
         " split_dim = 0 concat_dim = 0 : " + t + " -> " + t + "\n";
  } else if (kind == "collective_permute") {
    std::string pairs;
    for (int64_t i = 0; i < group; ++i)
      pairs += (i ? ", " : "") + std::to_string(i) + " -> " +
               std::to_string((i + 1) % group);
    b += "      %v = partita.collective_permute %acc" + axes + " pairs = [" +
         pairs + "] : " + t + "\n";
  } else { // the baseline of the others: the multiply alone
    b += "      %m = partita.mul %acc, %c : " + t + "\n";
    b += "      partita.yield %m : " + t + "\n";
    return p;
  }
  b += "      %m = partita.mul %v, %c : " + t + "\n";
  b += "      partita.yield %m : " + t + "\n";
  return p;
}

} // namespace

namespace {

/// The compute figures: the cost of dispatching an instruction, elementwise
/// and einsum throughput, and a program run apart, into `calibration`.
Status measureCompute(Calibration &calibration, int64_t devices, int64_t steps,
                      llvm::raw_ostream &log) {
  // What a trip's work other than `except` costs at the figures measured
  // so far (zero for those not measured yet).
  auto otherCost = [&](const StepProfile &work) {
    return work.instructions * calibration.instructionUs * 1e-6 +
           work.einsumFlops / calibration.einsumFlopsPerSecond +
           work.elements / calibration.elementsPerSecond;
  };
  auto measure = [&](const Probe &probe) -> Expected<Trip> {
    return measureTrip(probe, steps);
  };
  // Dispatch: eight instructions on 8 x 8 blocks per trip (their few
  // elements counted at no cost: the elementwise rate comes next).
  {
    Probe p{devices, devices, 8, 8, "", ""};
    std::string t = tensorType(8, 8);
    p.body = "      %e = partita.einsum \"ij,jk->ik\" %acc, %x : (" + t + ", " +
             t + ") -> " + t + "\n" +
             "      %r = partita.reduce sum %e dims = [1] : " + t +
             " -> tensor<8xf32>\n" +
             "      %b = partita.broadcast %r dims = [0] : tensor<8xf32> -> " +
             t + "\n" + "      %t = partita.transpose %b perm = [1, 0] : " + t +
             " -> " + t + "\n" + "      %h = partita.tanh %t : " + t + "\n" +
             "      %s = partita.reduce max %h dims = [0] : " + t +
             " -> tensor<8xf32>\n" +
             "      %u = partita.broadcast %s dims = [1] : tensor<8xf32> -> " +
             t + "\n" + "      %m = partita.mul %u, %c : " + t + "\n" +
             "      partita.yield %m : " + t + "\n";
    Expected<Trip> trip = measure(p);
    if (!trip)
      return trip.status();
    calibration.instructionUs =
        trip->seconds / std::max(trip->work.instructions, 1.0) * 1e6;
    if (!(trip->seconds > 0))
      log << "warning: the instruction probe measured no time (a noisy "
             "machine?); rerun with more --steps\n";
  }
  // Elementwise: the mix a model's step has between its einsums (fused
  // chains, a transpose, a reduction, a broadcast) on 128 x 128 blocks.
  calibration.elementsPerSecond = 1e300;
  calibration.einsumFlopsPerSecond = 1e300;
  {
    Probe p{devices, devices, 128, 128, "", ""};
    std::string t = tensorType(128, 128);
    p.body = "      %a = partita.add %acc, %x : " + t + "\n" +
             "      %d = partita.mul %a, %c : " + t + "\n" +
             "      %t = partita.transpose %d perm = [1, 0] : " + t + " -> " +
             t + "\n" + "      %r = partita.reduce sum %t dims = [1] : " + t +
             " -> tensor<128xf32>\n" +
             "      %b = partita.broadcast %r dims = [0] : tensor<128xf32> "
             "-> " +
             t + "\n" + "      %e = partita.exp %b : " + t + "\n" +
             "      %s = partita.sub %e, %t : " + t + "\n" +
             "      %m = partita.mul %s, %c : " + t + "\n" +
             "      partita.yield %m : " + t + "\n";
    Expected<Trip> trip = measure(p);
    if (!trip)
      return trip.status();
    double spent = trip->seconds - otherCost(trip->work);
    if (!(spent > 0))
      log << "warning: the elementwise probe measured no time beyond its "
             "instructions; rerun with more --steps\n";
    calibration.elementsPerSecond = trip->work.elements / std::max(spent, 1e-9);
  }
  // Einsum: 128 x 128 by 128 x 128 per trip, then the multiply.
  {
    Probe p{devices, devices, 128, 128, "", ""};
    std::string t = tensorType(128, 128);
    p.body = "      %e = partita.einsum \"ij,jk->ik\" %acc, %x : (" + t + ", " +
             t + ") -> " + t + "\n" + "      %m = partita.mul %e, %c : " + t +
             "\n" + "      partita.yield %m : " + t + "\n";
    Expected<Trip> trip = measure(p);
    if (!trip)
      return trip.status();
    double flops = trip->work.einsumFlops;
    trip->work.einsumFlops = 0;
    double spent = trip->seconds - otherCost(trip->work);
    if (!(spent > 0))
      log << "warning: the einsum probe measured no time beyond the rest of "
             "its trip; rerun with more --steps\n";
    calibration.einsumFlopsPerSecond = flops / std::max(spent, 1e-9);
  }
  // Running a program apart (a pipeline stage's action): one trip of a
  // multiply on 8 x 8 and on 256 x 256 blocks per device, less its
  // instructions, against the bytes of its global input and output.
  {
    double seconds[2], bytes[2];
    const int64_t sides[2] = {8, 256};
    for (int s = 0; s < 2; ++s) {
      Probe p{devices, devices, sides[s], sides[s], "", ""};
      std::string t = tensorType(sides[s], sides[s]);
      p.body = "      %m = partita.mul %acc, %c : " + t + "\n" +
               "      partita.yield %m : " + t + "\n";
      Expected<Executable> program = compileProbe(p, 1);
      if (!program)
        return program.status();
      Expected<double> launch = secondsPerLaunch(*program, steps);
      if (!launch)
        return launch.status();
      seconds[s] =
          std::max(*launch - otherCost(profileExecutable(*program)), 0.0);
      bytes[s] = 2.0 * 4 * sides[s] * sides[s] * devices;
    }
    double slope = (seconds[1] - seconds[0]) / (bytes[1] - bytes[0]);
    calibration.hostBytesPerSecond = slope > 0 ? 1 / slope : 0;
    calibration.launchUs =
        std::max(seconds[0] - (slope > 0 ? bytes[0] * slope : 0), 0.0) * 1e6;
  }
  log << llvm::format("instruction %.2f us, einsum %.3g FLOP/s, elementwise "
                      "%.3g elements/s per device; a program run apart %.1f "
                      "us and %.3g bytes/s of its inputs and outputs\n",
                      calibration.instructionUs,
                      calibration.einsumFlopsPerSecond,
                      calibration.elementsPerSecond, calibration.launchUs,
                      calibration.hostBytesPerSecond);

  return Status::success();
}

/// A latency and a bandwidth per collective kind and group size, into
/// `calibration` (its instruction cost measured first).
Status measureCollectives(Calibration &calibration, int64_t devices,
                          int64_t steps, llvm::raw_ostream &log) {
  auto measure = [&](const Probe &probe) -> Expected<Trip> {
    return measureTrip(probe, steps);
  };
  // Collectives: per kind and group, a call on about 64 and about 65536
  // f32 (256 B and 256 KiB per device; the rows a multiple of the group,
  // which reduce_scatter and all_to_all split), each less its baseline:
  // the same trip with the collective replaced by a local op of its
  // result's shape (nothing for most, so the baseline is the multiply
  // alone; a local slice for reduce_scatter). An all_gather's all_slice is
  // a local slice, costed as an instruction.
  double instruction = calibration.instructionUs * 1e-6;
  log << llvm::format("%-18s %-9s %12s %12s   %s\n", "collective", "group",
                      "256 B/dev", "256 KiB/dev", "fit");
  for (const char *kind : {"all_reduce", "all_gather", "reduce_scatter",
                           "all_to_all", "collective_permute"})
    for (int64_t group = 2; group <= devices; ++group) {
      if (devices % group)
        continue;
      double seconds[2], bytes[2];
      for (int s = 0; s < 2; ++s) {
        int64_t side = s == 0 ? 8 : 256;
        int64_t rows = (side + group - 1) / group * group, cols = side;
        Expected<Trip> trip =
            measure(collectiveProbe(kind, devices, group, rows, cols));
        if (!trip)
          return trip.status();
        Expected<Trip> base = measure(collectiveProbe(
            std::string(kind) == "reduce_scatter" ? "reduce_scatter_base" : "",
            devices, group, rows, cols));
        if (!base)
          return base.status();
        double rest = base->seconds;
        if (std::string(kind) == "reduce_scatter")
          rest -= instruction; // its all_slice
        if (std::string(kind) == "all_gather")
          rest += instruction; // the all_slice after it
        seconds[s] = std::max(trip->seconds - rest, 0.0);
        bytes[s] = 4.0 * rows * cols;
      }
      std::string warning;
      CollectiveFit fit = fitCollective(kind, group, seconds, bytes, &warning);
      log << warning;
      calibration.collectives[{kind, group}] = fit;
      log << llvm::format("%-18s group %-3lld %9.1f us %9.1f us   latency "
                          "%8.1f us, %8.3f GB/s\n",
                          kind, static_cast<long long>(group), seconds[0] * 1e6,
                          seconds[1] * 1e6, fit.latencyUs, fit.bandwidthGBps);
    }

  return Status::success();
}

} // namespace

Expected<Calibration>
partita::calibrateCpuDevices(int64_t devices, const std::string &devicesText,
                             int64_t steps, llvm::raw_ostream &log) {
  Calibration calibration;
  calibration.devices = devicesText;
  log << "calibrating " << devicesText << " (every device busy at once)\n";

  if (Status status = measureCompute(calibration, devices, steps, log);
      !status.ok())
    return status;
  if (Status status = measureCollectives(calibration, devices, steps, log);
      !status.ok())
    return status;
  return calibration;
}

std::string partita::clusterFileText(const Calibration &calibration,
                                     int64_t devices) {
  // The cluster file: the calibration, and the links and throughput the
  // quick estimate uses, from the whole-machine all_reduce.
  double flops = calibration.einsumFlopsPerSecond;
  double scale = 1;
  const CollectiveFit *link = calibration.fitFor("all_reduce", devices, scale);
  auto linkJson = [&] {
    return llvm::json::Object{
        {"bandwidth_GBps", link ? link->bandwidthGBps : 450.0},
        {"latency_us", link ? link->latencyUs : 5.0}};
  };
  llvm::json::Object root{{"devices_per_node", devices},
                          {"flops_per_second", flops},
                          {"intra_node", linkJson()},
                          {"inter_node", linkJson()},
                          {"calibration", calibrationObject(calibration)}};
  return llvm::formatv("{0:2}\n", llvm::json::Value(std::move(root))).str();
}

CollectiveFit partita::fitCollective(const char *kind, int64_t group,
                                     const double seconds[2],
                                     const double bytes[2],
                                     std::string *warning) {
  CollectiveFit fit;
  double slope = (seconds[1] - seconds[0]) / (bytes[1] - bytes[0]);
  // Noise can make the large call look no slower: then bandwidth is what
  // the large call alone implies.
  if (!(slope > 0))
    slope = std::max(seconds[1], 1e-9) / bytes[1];
  fit.bandwidthGBps = 1e-9 / slope;
  fit.latencyUs = std::max(seconds[0] - bytes[0] * slope, 0.0) * 1e6;
  // A busy machine times the small call as long as the large one: a fit
  // outside what any link does is said, and kept within the range the cost
  // model reads (lib/Transforms/Interconnect.cpp).
  if (fit.bandwidthGBps > 1e4 || fit.latencyUs < 0.01) {
    if (warning) {
      llvm::raw_string_ostream os(*warning);
      os << llvm::format(
          "warning: %s over %lld devices fitted %.3g GB/s and %.2f us, "
          "outside what a link does (the machine was busy, or the calls "
          "too short to time): rerun on an idle machine, or with more "
          "--steps\n",
          kind, static_cast<long long>(group), fit.bandwidthGBps,
          fit.latencyUs);
    }
    fit.bandwidthGBps = std::min(fit.bandwidthGBps, 1e4);
  }
  return fit;
}
