//===- compute.cpp - A compiled step's kernels against their peers --------===//
//
// partita-bench-compute STEP.pex: every compute instruction of a compiled
// program (an Executable file, e.g. GPT-2 small's train step as one device
// of cpu:8 holds it), run alone through the CPU runtime's kernels
// (runKernel, as the interpreter calls it) on random operands, one thread,
// beside a peer measured in the same run:
//
//   * two-operand f32 einsums against cblas_sgemm called directly on the
//     same batch, M, N and K (batch as a loop of GEMMs on contiguous
//     operands, the layout most favourable to OpenBLAS): the ratio is
//     OpenBLAS time / runtime time (goal >= 0.95);
//   * memory-bound instructions (fused elementwise chains, reductions such
//     as softmax's and a norm's, broadcasts, transposes, converts, plain
//     elementwise ops) against memcpy of the same number of bytes: the
//     fraction of the copy's bandwidth the instruction reaches, counting
//     every operand byte read and every result byte written once (goal
//     >= 0.7).
//
// Identical instructions (same op, attributes and types) are timed once
// and weighted by how often the program runs them (a loop's body counts
// once per trip). Totals are time-weighted: the einsums' summed OpenBLAS
// time over their summed runtime time, and the memory-bound
// instructions' summed copy time over their summed time.
//
//   build/bin/partita-bench-compute STEP.pex [--repeats N] [--rows N]
//
// bench/compute.sh makes GPT-2 small's step and runs this on it.
//
//===----------------------------------------------------------------------===//

#include "Timing.h"

#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/Program/ExecutableFile.h"
#include "partita/Sharding/Einsum.h"

#ifdef PARTITA_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace partita;
using partita::bench::medianSeconds;

namespace {


/// How a kind of instruction is measured.
enum class Kind { Gemm, MemoryBound, Other };

Kind kindOf(const Instruction &inst) {
  // A fused chain headed by an einsum (its spec in the text) is the
  // einsum's GEMM with an elementwise epilogue.
  if (inst.op == OpCode::Fused && inst.text.find("->") != std::string::npos)
    return Kind::Gemm;
  switch (inst.op) {
  case OpCode::Einsum:
    return Kind::Gemm;
  case OpCode::Fused:
  case OpCode::Reduce:
  case OpCode::Broadcast:
  case OpCode::Transpose:
  case OpCode::Convert:
  case OpCode::Neg:
  case OpCode::Exp:
  case OpCode::Log:
  case OpCode::Tanh:
  case OpCode::Logistic:
  case OpCode::Sqrt:
  case OpCode::Rsqrt:
  case OpCode::Erf:
  case OpCode::Add:
  case OpCode::Sub:
  case OpCode::Mul:
  case OpCode::Div:
  case OpCode::Max:
  case OpCode::Min:
  case OpCode::Select:
  case OpCode::Compare:
    return Kind::MemoryBound;
  default:
    return Kind::Other;
  }
}

/// One distinct instruction and how many times a step runs it.
struct Entry {
  const Instruction *inst = nullptr;
  std::vector<TensorType> operandTypes, resultTypes;
  int64_t count = 0;
};

std::string keyOf(const Instruction &inst,
                  const std::vector<TensorType> &operands,
                  const std::vector<TensorType> &results) {
  std::string key = std::string(opCodeName(inst.op)) + "|" + inst.text + "|";
  for (int64_t value : inst.ints)
    key += std::to_string(value) + ",";
  for (const auto *types : {&operands, &results}) {
    key += "|";
    for (const TensorType &type : *types)
      key += std::string(dtypeName(type.dtype)) + formatShape(type.shape);
  }
  return key;
}

/// Collects the instructions of [begin, end) of `program`'s stream, each
/// weighted by `weight` (a loop's body: its trip count).
void collect(const Executable &program, size_t begin, size_t end,
             int64_t weight, std::map<std::string, Entry> &entries) {
  const std::vector<Instruction> &stream = program.instructions;
  for (size_t i = begin; i < end; ++i) {
    const Instruction &inst = stream[i];
    if (inst.op == OpCode::Loop) {
      // ints: trip count, body length, then the carried slots
      // (Instruction.h).
      size_t bodyEnd = i + 1 + static_cast<size_t>(inst.ints[1]);
      collect(program, i + 1, bodyEnd, weight * inst.ints[0], entries);
      i = bodyEnd - 1;
      continue;
    }
    if (kindOf(inst) == Kind::Other)
      continue;
    std::vector<TensorType> operands, results;
    for (int32_t slot : inst.operands)
      operands.push_back(program.slots[slot]);
    for (int32_t slot : inst.results)
      results.push_back(program.slots[slot]);
    Entry &entry = entries[keyOf(inst, operands, results)];
    if (!entry.inst) {
      entry.inst = &inst;
      entry.operandTypes = std::move(operands);
      entry.resultTypes = std::move(results);
    }
    entry.count += weight;
  }
}

/// A buffer of `type` holding values a kernel runs on at full speed: floats
/// in [0.5, 1.5) (no log of a negative, no denormals), integers and
/// booleans 0 (in range as an index).
std::vector<uint8_t> operandBytes(const TensorType &type,
                                  std::mt19937 &random) {
  HostArray array = HostArray::zeros(type.dtype, type.shape);
  bool floating = type.dtype == DType::F32 || type.dtype == DType::F64 ||
                  type.dtype == DType::BF16 || type.dtype == DType::F16;
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  if (floating)
    for (int64_t e = 0; e < array.numElements(); ++e)
      setElementFromDouble(array, e, uniform(random));
  return std::move(array.bytes);
}

/// Batch, M, N and K of a two-operand einsum ("bmk,bkn->bmn"), or false
/// when a label is summed within one operand alone.
bool gemmDims(const Entry &entry, int64_t dims[4]) {
  std::vector<std::string> inputs;
  std::string output;
  if (!splitEinsumTerms(entry.inst->text, inputs, output) ||
      inputs.size() != 2 || entry.operandTypes.size() < 2)
    return false;
  std::map<char, int64_t> size;
  for (size_t i = 0; i < 2; ++i)
    for (size_t d = 0; d < inputs[i].size(); ++d)
      size[inputs[i][d]] = entry.operandTypes[i].shape[d];
  std::fill(dims, dims + 4, 1);
  for (const auto &[label, extent] : size) {
    bool inLhs = inputs[0].find(label) != std::string::npos;
    bool inRhs = inputs[1].find(label) != std::string::npos;
    bool inOut = output.find(label) != std::string::npos;
    int which = inLhs && inRhs ? (inOut ? 0 : 3) : inOut ? (inLhs ? 1 : 2) : -1;
    if (which < 0)
      return false;
    dims[which] *= extent;
  }
  return true;
}

struct Row {
  std::string name;
  int64_t count = 0;
  double seconds = 0, peerSeconds = 0, measure = 0; // GFLOP/s or GB/s
};

void printRows(const char *title, const char *unit, const char *peer,
               const char *ratioName, std::vector<Row> rows, size_t limit) {
  double total = 0, peerTotal = 0;
  for (const Row &row : rows) {
    total += row.seconds * row.count;
    peerTotal += row.peerSeconds * row.count;
  }
  std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
    return a.seconds * a.count > b.seconds * b.count;
  });
  std::printf("\n%s: %zu distinct, %.1f ms per step (runtime), %.1f ms "
              "(%s); %s %.3f\n",
              title, rows.size(), total * 1e3, peerTotal * 1e3, peer, ratioName,
              total > 0 ? peerTotal / total : 0.0);
  std::printf("  %-58s %5s %10s %10s %9s %7s\n",
              "instruction (most time first)", "count", "ms", "peer_ms", unit,
              "ratio");
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const Row &row = rows[i];
    std::printf("  %-58.58s %5lld %10.3f %10.3f %9.1f %7.3f\n",
                row.name.c_str(), static_cast<long long>(row.count),
                row.seconds * 1e3, row.peerSeconds * 1e3, row.measure,
                row.peerSeconds / row.seconds);
  }
}

std::string describeTypes(const std::vector<TensorType> &types) {
  std::string text;
  for (const TensorType &type : types)
    text += (text.empty() ? "" : ",") + std::string(dtypeName(type.dtype)) +
            formatShape(type.shape);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  int repeats = 5;
  size_t limit = 12;
  const char *path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
      limit = static_cast<size_t>(std::max(1, std::atoi(argv[++i])));
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else {
      std::fprintf(stderr, "usage: partita-bench-compute STEP.pex "
                           "[--repeats N] [--rows N]\n");
      return 1;
    }
  }
  if (!path) {
    std::fprintf(stderr, "usage: partita-bench-compute STEP.pex "
                         "[--repeats N] [--rows N]\n");
    return 1;
  }
  Expected<Executable> program = readExecutableFile(path);
  if (!program) {
    std::fprintf(stderr, "error: %s\n", program.status().message().c_str());
    return 1;
  }
#ifdef PARTITA_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
  std::map<std::string, Entry> entries;
  collect(*program, 0, program->instructions.size(), 1, entries);
  std::printf("%s: %zu distinct compute instructions; one thread, median of "
              "%d runs each\n",
              path, entries.size(), repeats);
  std::mt19937 random(1);
  std::vector<Row> gemms, memoryBound;
  for (const auto &[key, entry] : entries) {
    std::vector<std::vector<uint8_t>> operands, results;
    std::vector<const void *> operandPointers;
    std::vector<void *> resultPointers;
    for (const TensorType &type : entry.operandTypes) {
      operands.push_back(operandBytes(type, random));
      operandPointers.push_back(operands.back().data());
    }
    int64_t bytes = 0;
    for (const TensorType &type : entry.operandTypes)
      bytes += type.bytes();
    for (const TensorType &type : entry.resultTypes) {
      results.emplace_back(static_cast<size_t>(type.bytes()));
      resultPointers.push_back(results.back().data());
      bytes += type.bytes();
    }
    Status failed = Status::success();
    double seconds = medianSeconds(repeats, [&] {
      Status status = cpu::runKernel(*entry.inst, entry.operandTypes,
                                     operandPointers, entry.resultTypes,
                                     resultPointers, &program->constants);
      if (!status)
        failed = status;
    });
    Row row;
    row.name = std::string(opCodeName(entry.inst->op)) + " ";
    if (entry.inst->op != OpCode::Fused) {
      row.name += "{";
      for (size_t i = 0; i < entry.inst->ints.size(); ++i)
        row.name += (i ? "," : "") + std::to_string(entry.inst->ints[i]);
      row.name += "} ";
    }
    row.name += (entry.inst->text.empty() ? "" : entry.inst->text + " ") +
                describeTypes(entry.operandTypes);
    row.count = entry.count;
    row.seconds = seconds;
    if (!failed) {
      std::fprintf(stderr, "skipped %s: %s\n", row.name.c_str(),
                   failed.message().c_str());
      continue;
    }
    int64_t dims[4];
    if (kindOf(*entry.inst) == Kind::Gemm) {
      if (entry.operandTypes.size() < 2 ||
          entry.operandTypes[0].dtype != DType::F32 || !gemmDims(entry, dims))
        continue;
      int64_t batch = dims[0], m = dims[1], n = dims[2], k = dims[3];
      row.measure = 2.0 * batch * m * n * k / seconds * 1e-9;
#ifdef PARTITA_HAVE_OPENBLAS
      std::vector<float> a(batch * m * k, 0.75f), b(batch * k * n, 1.25f),
          c(batch * m * n);
      row.peerSeconds = medianSeconds(repeats, [&] {
        for (int64_t i = 0; i < batch; ++i)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                      a.data() + i * m * k, k, b.data() + i * k * n, n, 0.0f,
                      c.data() + i * m * n, n);
      });
#else
      row.peerSeconds = seconds;
#endif
      gemms.push_back(row);
    } else {
      std::vector<uint8_t> from(static_cast<size_t>(bytes / 2) + 1, 1),
          to(from.size());
      row.peerSeconds = medianSeconds(
          repeats, [&] { std::memcpy(to.data(), from.data(), from.size()); });
      row.measure = bytes / seconds * 1e-9;
      memoryBound.push_back(row);
    }
  }
#ifdef PARTITA_HAVE_OPENBLAS
  const char *gemmPeer = "OpenBLAS sgemm";
#else
  const char *gemmPeer = "no OpenBLAS in this build: the runtime itself";
#endif
  printRows("einsums (f32, two operands; fused: with their epilogue) "
            "against cblas_sgemm",
            "GF/s", gemmPeer, "OpenBLAS time / runtime time", gemms, limit);
  printRows("memory-bound instructions against memcpy of their bytes", "GB/s",
            "memcpy", "fraction of copy bandwidth", memoryBound, limit);
  return 0;
}
