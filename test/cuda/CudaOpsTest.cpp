//===- CudaOpsTest.cpp - Every CUDA kernel against the CPU reference ------===//
//
// Runs each tensor op of the runtime on the CUDA backend and on the CPU
// kernels (the reference) with the same random inputs, in f32, bf16 and the
// integer types where the op takes them, and compares (RunSupport's
// tolerances: f32 rel 1e-4, bf16 2e-2, integers exact). Exits 77 — CTest's
// skip — when no GPU is visible, so CI without a GPU stays green and says
// the test was skipped; tools/gpu-check.sh runs it on the GPU machine.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/CPU/Kernels.h"
#include "partita/Runtime/CUDA/CudaBackend.h"
#include "partita/Runtime/Execution/RunSupport.h"
#include "partita/Runtime/Program/Fused.h"

#include <cstdio>
#include <cstring>
#include <random>

using namespace partita;

namespace {

HostArray randomArray(DType dtype, const std::vector<int64_t> &shape,
                      std::mt19937 &random, int64_t intLimit = 4,
                      bool positive = false) {
  HostArray array = HostArray::zeros(dtype, shape);
  for (int64_t e = 0; e < array.numElements(); ++e) {
    double value = std::uniform_real_distribution<double>(0.1, 2.0)(random);
    if (!positive && random() % 2)
      value = -value;
    uint8_t *at = array.bytes.data() + e * dtypeSize(dtype);
    switch (dtype) {
    case DType::F32: {
      auto v = static_cast<float>(value);
      std::memcpy(at, &v, 4);
      break;
    }
    case DType::BF16: {
      uint16_t v = partita::floatToBFloat16(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      break;
    }
    case DType::I32: {
      auto v = static_cast<int32_t>(random() % intLimit);
      std::memcpy(at, &v, 4);
      break;
    }
    case DType::I8: { // Signed: negative values and amounts too.
      auto v = static_cast<int8_t>(static_cast<int64_t>(random() % 256) - 128);
      std::memcpy(at, &v, 1);
      break;
    }
    case DType::I64: {
      auto v = static_cast<int64_t>(random() % (2 * intLimit)) - intLimit;
      std::memcpy(at, &v, 8);
      break;
    }
    case DType::Bool:
      *at = random() % 2;
      break;
    default:
      break;
    }
  }
  return array;
}

struct Case {
  std::string name;
  Instruction inst;
  std::vector<HostArray> operands;
  std::vector<TensorType> results;
};

int failures = 0, passed = 0;

void runCase(Backend &gpu, const Case &c) {
  std::vector<TensorType> operandTypes;
  std::vector<const void *> hostOperands;
  for (const HostArray &a : c.operands) {
    operandTypes.push_back({a.dtype, a.shape});
    hostOperands.push_back(a.bytes.data());
  }
  std::vector<HostArray> want;
  std::vector<void *> hostResults;
  for (const TensorType &t : c.results)
    want.push_back(HostArray::zeros(t.dtype, t.shape));
  for (HostArray &w : want)
    hostResults.push_back(w.bytes.data());
  std::vector<HostArray> constants;
  if (Status s = cpu::runKernel(c.inst, operandTypes, hostOperands, c.results,
                                hostResults, &constants);
      !s) {
    std::printf("FAIL %s: the CPU reference fails: %s\n", c.name.c_str(),
                s.message().c_str());
    ++failures;
    return;
  }
  std::vector<void *> deviceOperands, deviceResults;
  for (const HostArray &a : c.operands) {
    void *d = *gpu.allocate(a.numBytes());
    (void)gpu.copyToDevice(d, a.bytes.data(), a.numBytes());
    deviceOperands.push_back(d);
  }
  for (const TensorType &t : c.results)
    deviceResults.push_back(*gpu.allocate(t.bytes()));
  std::vector<const void *> constOperands(deviceOperands.begin(),
                                          deviceOperands.end());
  Status ran = gpu.run(c.inst, operandTypes, constOperands, c.results,
                       deviceResults, constants);
  if (ran)
    ran = gpu.synchronize();
  bool ok = ran.ok();
  for (size_t r = 0; ok && r < c.results.size(); ++r) {
    HostArray got = HostArray::zeros(c.results[r].dtype, c.results[r].shape);
    (void)gpu.copyToHost(got.bytes.data(), deviceResults[r], got.numBytes());
    Comparison comparison = compareArrays(got, want[r]);
    if (!comparison.within) {
      std::printf("FAIL %s: %s\n", c.name.c_str(),
                  describeComparison("result " + std::to_string(r), comparison)
                      .c_str());
      ok = false;
    }
  }
  if (!ran)
    std::printf("FAIL %s: %s\n", c.name.c_str(), ran.message().c_str());
  for (void *d : deviceOperands)
    gpu.release(d);
  for (void *d : deviceResults)
    gpu.release(d);
  ok ? ++passed : ++failures;
}

std::vector<Case> cases() {
  std::mt19937 random(11);
  std::vector<Case> all;
  auto add = [&](std::string name, OpCode op, std::vector<HostArray> operands,
                 std::vector<TensorType> results, std::vector<int64_t> ints = {},
                 std::string text = "") {
    Case c;
    c.name = std::move(name);
    c.inst.op = op;
    c.inst.ints = std::move(ints);
    c.inst.text = std::move(text);
    c.operands = std::move(operands);
    c.results = std::move(results);
    all.push_back(std::move(c));
  };
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::string t = dtypeName(dtype);
    for (OpCode op :
         {OpCode::Neg, OpCode::Abs, OpCode::Sign, OpCode::Exp, OpCode::Tanh,
          OpCode::Logistic, OpCode::Erf, OpCode::Sin, OpCode::Cos,
          OpCode::Floor})
      add(std::string(opCodeName(op)) + " " + t, op,
          {randomArray(dtype, {7, 33}, random)}, {{dtype, {7, 33}}});
    for (OpCode op : {OpCode::Log, OpCode::Log1p, OpCode::Sqrt, OpCode::Rsqrt})
      add(std::string(opCodeName(op)) + " " + t, op,
          {randomArray(dtype, {7, 33}, random, 4, true)}, {{dtype, {7, 33}}});
    for (OpCode op : {OpCode::Add, OpCode::Sub, OpCode::Mul, OpCode::Div,
                      OpCode::Max, OpCode::Min})
      add(std::string(opCodeName(op)) + " " + t, op,
          {randomArray(dtype, {5, 17}, random),
           randomArray(dtype, {5, 17}, random)},
          {{dtype, {5, 17}}});
    add("compare gt " + t, OpCode::Compare,
        {randomArray(dtype, {9}, random), randomArray(dtype, {9}, random)},
        {{DType::Bool, {9}}}, {static_cast<int64_t>(CompareCode::GT)});
    add("reduce sum " + t, OpCode::Reduce,
        {randomArray(dtype, {4, 6, 5}, random)}, {{dtype, {6}}},
        {static_cast<int64_t>(ReductionCode::Sum), 0, 2});
    add("reduce max " + t, OpCode::Reduce,
        {randomArray(dtype, {4, 6}, random)}, {{dtype, {4}}},
        {static_cast<int64_t>(ReductionCode::Max), 1});
    add("broadcast " + t, OpCode::Broadcast, {randomArray(dtype, {3, 1}, random)},
        {{dtype, {2, 3, 4}}}, {1, 2});
    add("transpose " + t, OpCode::Transpose,
        {randomArray(dtype, {2, 3, 4}, random)}, {{dtype, {4, 2, 3}}},
        {2, 0, 1});
    add("slice " + t, OpCode::Slice, {randomArray(dtype, {6, 7}, random)},
        {{dtype, {2, 3}}}, {1, 1, 5, 7, 2, 2});
    add("concatenate " + t, OpCode::Concatenate,
        {randomArray(dtype, {2, 3}, random), randomArray(dtype, {2, 2}, random)},
        {{dtype, {2, 5}}}, {1});
    add("pad " + t, OpCode::Pad,
        {randomArray(dtype, {2, 3}, random), randomArray(dtype, {}, random)},
        {{dtype, {3, 6}}}, {1, 2, 0, 1});
    add("cumsum " + t, OpCode::Cumsum, {randomArray(dtype, {3, 8}, random)},
        {{dtype, {3, 8}}}, {1, 0});
    add("cumsum reverse " + t, OpCode::Cumsum,
        {randomArray(dtype, {8, 3}, random)}, {{dtype, {8, 3}}}, {0, 1});
    add("argmax " + t, OpCode::Argmax, {randomArray(dtype, {5, 9}, random)},
        {{DType::I32, {5}}}, {1});
    add("top_k " + t, OpCode::TopK, {randomArray(dtype, {4, 10}, random)},
        {{dtype, {4, 3}}, {DType::I32, {4, 3}}}, {1, 3});
    add("gather " + t, OpCode::Gather,
        {randomArray(dtype, {6, 4}, random),
         randomArray(DType::I32, {2, 3}, random, 6)},
        {{dtype, {2, 3, 4}}});
    add("scatter_add " + t, OpCode::ScatterAdd,
        {randomArray(dtype, {6, 4}, random),
         randomArray(DType::I32, {5}, random, 6),
         randomArray(dtype, {5, 4}, random)},
        {{dtype, {6, 4}}});
    add("select " + t, OpCode::Select,
        {randomArray(DType::Bool, {10}, random), randomArray(dtype, {10}, random),
         randomArray(dtype, {10}, random)},
        {{dtype, {10}}});
    add("iota " + t, OpCode::Iota, {}, {{dtype, {3, 5}}}, {1});
    add("einsum matmul " + t, OpCode::Einsum,
        {randomArray(dtype, {33, 65}, random),
         randomArray(dtype, {65, 17}, random)},
        {{dtype, {33, 17}}}, {}, "mk,kn->mn");
    add("einsum batched, permuted " + t, OpCode::Einsum,
        {randomArray(dtype, {4, 8, 3, 5}, random),
         randomArray(dtype, {4, 5, 3, 6}, random)},
        {{dtype, {3, 4, 8, 6}}}, {}, "bmhk,bkhn->hbmn");
  }
  add("einsum bf16 -> f32", OpCode::Einsum,
      {randomArray(DType::BF16, {16, 32}, random),
       randomArray(DType::BF16, {32, 8}, random)},
      {{DType::F32, {16, 8}}}, {}, "mk,kn->mn");
  add("convert f32 -> bf16", OpCode::Convert,
      {randomArray(DType::F32, {40}, random)}, {{DType::BF16, {40}}});
  add("convert bool -> f32", OpCode::Convert,
      {randomArray(DType::Bool, {40}, random)}, {{DType::F32, {40}}});
  add("add i32", OpCode::Add,
      {randomArray(DType::I32, {40}, random, 100),
       randomArray(DType::I32, {40}, random, 100)},
      {{DType::I32, {40}}});
  add("and bool", OpCode::And,
      {randomArray(DType::Bool, {40}, random),
       randomArray(DType::Bool, {40}, random)},
      {{DType::Bool, {40}}});
  // jax.random's threefry: shifts at 8, 32 and 64 bits (amounts past the
  // width included) and its bits-to-floats bitcast.
  for (DType dtype : {DType::I8, DType::I32, DType::I64})
    for (OpCode op : {OpCode::ShiftLeft, OpCode::ShiftRightLogical,
                      OpCode::ShiftRightArithmetic})
      add(std::string(opCodeName(op)) + " " + dtypeName(dtype), op,
          {randomArray(dtype, {40}, random, 1000),
           randomArray(dtype, {40}, random, 70)},
          {{dtype, {40}}});
  add("bitcast_convert i32 -> f32", OpCode::BitcastConvert,
      {randomArray(DType::I32, {40}, random, 1 << 30)}, {{DType::F32, {40}}});
  // Fused chains (Fused.h): steps over a full-size, a broadcast and a
  // scalar operand and a constant; then with an einsum head, a row sum and
  // a column max.
  FusedProgram chain;
  chain.operands = {{1, 600}, {5, 12}, {1, 1}};
  chain.steps = {{OpCode::Mul, {FusedRefKind::Operand, 0},
                  {FusedRefKind::Operand, 1}},
                 {OpCode::Tanh, {FusedRefKind::Step, 0},
                  {FusedRefKind::Step, 0}},
                 {OpCode::Add, {FusedRefKind::Step, 1},
                  {FusedRefKind::Operand, 2}}};
  chain.results = {2, 0};
  add("fused chain f32", OpCode::Fused,
      {randomArray(DType::F32, {10, 12, 5}, random),
       randomArray(DType::F32, {12}, random),
       randomArray(DType::F32, {}, random)},
      {{DType::F32, {10, 12, 5}}, {DType::F32, {10, 12, 5}}},
      encodeFused(chain));
  FusedProgram epilogue;
  epilogue.count = 33 * 17;
  epilogue.head = true;
  epilogue.operands = {{1, 17}};
  epilogue.steps = {{OpCode::Add, {FusedRefKind::Head, 0},
                     {FusedRefKind::Operand, 0}},
                    {OpCode::Tanh, {FusedRefKind::Step, 0},
                     {FusedRefKind::Step, 0}}};
  epilogue.results = {1};
  epilogue.reductions = {{ReductionCode::Sum, 1, 17, 33},
                         {ReductionCode::Max, 0, 1, 17}};
  add("fused einsum head and reductions f32", OpCode::Fused,
      {randomArray(DType::F32, {33, 65}, random),
       randomArray(DType::F32, {65, 17}, random),
       randomArray(DType::F32, {17}, random)},
      {{DType::F32, {33, 17}}, {DType::F32, {33, 17}}, {DType::F32, {33}},
       {DType::F32, {17}}},
      encodeFused(epilogue), "mk,kn->mn");
  return all;
}

} // namespace

int main() {
  std::string why;
  if (cudaDeviceCount(&why) == 0) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  Expected<std::unique_ptr<Backend>> gpu = createCudaBackend(0);
  if (!gpu) {
    std::printf("FAIL: %s\n", gpu.status().message().c_str());
    return 1;
  }
  for (const Case &c : cases())
    runCase(**gpu, c);
  // A spec that does not fit its operands or result is an error before any
  // index is taken from it (only a malformed executable carries one).
  for (const char *bad : {"abc,cd->ad", "ab,bc->ca", "ab,bc->ad", "ab->"}) {
    Instruction inst;
    inst.op = OpCode::Einsum;
    inst.text = bad;
    std::vector<TensorType> operandTypes{{DType::F32, {2, 3}},
                                         {DType::F32, {3, 4}}};
    std::vector<TensorType> resultTypes{{DType::F32, {2, 4}}};
    void *a = *(*gpu)->allocate(24), *b = *(*gpu)->allocate(48),
         *out = *(*gpu)->allocate(32);
    std::vector<HostArray> constants;
    Status ran = (*gpu)->run(inst, operandTypes, {a, b}, resultTypes, {out},
                             constants);
    if (ran.ok() || ran.message().find("einsum") == std::string::npos) {
      std::printf("FAIL malformed einsum '%s': %s\n", bad,
                  ran.ok() ? "accepted" : ran.message().c_str());
      ++failures;
    } else {
      ++passed;
    }
  }
  std::printf("cuda ops: %d cases agree with the CPU kernels, %d fail\n",
              passed, failures);
  return failures == 0 ? 0 : 1;
}
