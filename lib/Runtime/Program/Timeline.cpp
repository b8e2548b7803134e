//===- Timeline.cpp - Device timelines as trace events ------------------===//
//
// The trace event format is documented by the Chrome tracing project
// ("Trace Event Format"); Perfetto's UI reads the same JSON. docs/Runtime.md
// ("Timeline traces") describes what Partita writes.
//
//===----------------------------------------------------------------------===//

#include "partita/Runtime/Program/Timeline.h"
#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/Json.h"
#include "partita/Runtime/Program/Executable.h"

#include <algorithm>
#include <limits>

using namespace partita;

namespace {

std::string typeText(const TensorType &type) {
  std::string text = dtypeName(type.dtype);
  text += '[';
  for (size_t i = 0; i < type.shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(type.shape[i]);
  return text + ']';
}

/// The span's name: the op, an einsum's spec (a fused head's too), a
/// collective's axes.
std::string spanName(const Instruction &inst) {
  std::string name = opCodeName(inst.op);
  if ((inst.op == OpCode::Einsum || inst.op == OpCode::Fused) &&
      !inst.text.empty()) // A fused instruction's text is its head einsum.
    name += ' ' + inst.text;
  else if (isCollective(inst.op) && !inst.text.empty())
    name += '(' + inst.text + ')';
  return name;
}

const char *category(const Instruction &inst) {
  if (inst.op == OpCode::Loop)
    return "loop";
  // all_slice keeps a device's own block: no communication.
  return isCollective(inst.op) && inst.op != OpCode::AllSlice ? "collective"
                                                              : "compute";
}

double micros(int64_t nanos) { return static_cast<double>(nanos) / 1e3; }

} // namespace

std::string
partita::deviceTimelineTraceJson(const Executable &program,
                                 const std::vector<DeviceTimeline> &timelines,
                                 const TraceOptions &options) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const DeviceTimeline &timeline : timelines)
    for (const InstructionSpan &span : timeline.spans)
      origin = std::min(origin, span.startNanos);
  Json events = Json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", options.title}}}});
  for (const DeviceTimeline &timeline : timelines)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", timeline.device},
                      {"args", {{"name", "device " +
                                             std::to_string(timeline.device)}}}});
  for (const DeviceTimeline &timeline : timelines)
    for (const InstructionSpan &span : timeline.spans) {
      if (span.instruction < 0 ||
          static_cast<size_t>(span.instruction) >= program.instructions.size())
        continue;
      const Instruction &inst = program.instructions[span.instruction];
      Json args = {{"instruction", span.instruction}};
      if (span.trip >= 0)
        args["trip"] = span.trip;
      Json operands = Json::array(), results = Json::array();
      for (int32_t slot : inst.operands)
        if (slot >= 0 && static_cast<size_t>(slot) < program.slots.size())
          operands.push_back(typeText(program.slots[slot]));
      for (int32_t slot : inst.results)
        if (slot >= 0 && static_cast<size_t>(slot) < program.slots.size())
          results.push_back(typeText(program.slots[slot]));
      args["operands"] = operands;
      args["results"] = results;
      bool collective = isCollective(inst.op) &&
                        inst.op != OpCode::AllSlice &&
                        inst.operands.size() == 1;
      // The wait of an asynchronous collective: named after it.
      std::string name = spanName(inst);
      const char *cat = category(inst);
      bool wait = inst.op == OpCode::Wait && inst.ints.size() == 1 &&
                  inst.ints[0] > 0 && inst.ints[0] <= span.instruction;
      if (wait) {
        int64_t started = span.instruction - inst.ints[0];
        name = "wait " + spanName(program.instructions[started]);
        cat = "collective";
        args["collective"] = started;
        args["axes"] = program.instructions[started].text;
        args["waited_us"] = micros(span.waitedNanos);
      }
      if (collective) {
        args["axes"] = inst.text;
        args["bytes"] = program.slots[inst.operands[0]].bytes();
        args["bus_bytes"] = collectiveBusBytes(program, inst);
        args["waited_us"] = micros(span.waitedNanos);
      }
      double start = micros(span.startNanos - origin);
      events.push_back({{"name", name},
                        {"cat", cat},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", timeline.device},
                        {"ts", start},
                        {"dur", micros(span.nanos)},
                        {"args", std::move(args)}});
      if ((collective || wait) && span.waitedNanos > 0)
        events.push_back(
            {{"name", "wait"},
             {"cat", "wait"},
             {"ph", "X"},
             {"pid", 0},
             {"tid", timeline.device},
             {"ts", start},
             {"dur", micros(std::min(span.waitedNanos, span.nanos))},
             {"args", {{"instruction", span.instruction}}}});
    }
  Json axes = Json::array();
  for (const MeshAxis &axis : program.mesh.axes())
    axes.push_back({axis.name, axis.size});
  Json ids = Json::array();
  for (int64_t d = 0; d < program.mesh.numDevices(); ++d)
    ids.push_back(program.mesh.deviceIds().empty() ? d
                                                   : program.mesh.deviceIds()[d]);
  Json trace = {{"displayTimeUnit", "ms"},
                {"traceEvents", std::move(events)},
                {"otherData",
                 {{"mesh", program.mesh.toString()},
                  {"mesh_axes", std::move(axes)},
                  {"device_ids", std::move(ids)},
                  {"instructions", program.instructions.size()},
                  {"kernel_spans", options.asynchronousKernels
                                       ? "launches (the backend queues kernels)"
                                       : "kernel execution"}}}};
  return printJsonCompact(trace) + "\n";
}

Status partita::writeDeviceTrace(const std::string &path,
                                 const Executable &program,
                                 const std::vector<DeviceTimeline> &timelines,
                                 const TraceOptions &options) {
  return writeFileAtomically(path,
                             deviceTimelineTraceJson(program, timelines, options));
}
