//===- Index.cpp - gather and scatter_add ---------------------------------===//
//
// Row lookups and their adjoint. Indices are clamped to [0, rows - 1] in
// both ops, so gather and scatter_add stay exact adjoints and an index out
// of range never reads or writes outside the table.
//
//===----------------------------------------------------------------------===//
#include "KernelSupport.h"

#include <algorithm>

namespace partita {
namespace cpu {
namespace {

Status checkIndices(const KernelContext &ctx, const TensorType &table,
                    const TensorType &indices) {
  if (table.shape.empty())
    return ctx.error("table must have rank >= 1, got " + describe(table));
  if (indices.dtype != DType::I32 && indices.dtype != DType::I64)
    return ctx.error("indices must be i32 or i64, got " + describe(indices));
  if (table.shape[0] == 0 && indices.numElements() > 0)
    return ctx.error("table " + describe(table) + " has no rows to index");
  return Status::success();
}

/// indices.shape ++ table.shape[1:].
std::vector<int64_t> rowsShape(const TensorType &table,
                               const TensorType &indices) {
  std::vector<int64_t> shape = indices.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  return shape;
}

int64_t clampedRow(const KernelContext &ctx, const TensorType &indices,
                   int64_t position, int64_t rows) {
  int64_t row = loadIndex(indices.dtype, ctx.operand(1), position);
  return std::min(std::max<int64_t>(row, 0), rows - 1);
}

} // namespace

Status runGather(const KernelContext &ctx) {
  const TensorType &table = ctx.operandType(0), &indices = ctx.operandType(1);
  const TensorType &out = ctx.resultType(0);
  if (Status s = checkIndices(ctx, table, indices); !s)
    return s;
  std::vector<int64_t> expected = rowsShape(table, indices);
  if (out.dtype != table.dtype || out.shape != expected)
    return ctx.error("result must be " + std::string(dtypeName(table.dtype)) +
                     formatShape(expected) + ", got " + describe(out));
  int64_t rowBytes = (table.shape[0] > 0 ? table.bytes() / table.shape[0] : 0);
  if (table.shape[0] == 0)
    return Status::success();
  const char *rows = ctx.operand<char>(0);
  char *result = ctx.result<char>(0);
  int64_t count = indices.numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = clampedRow(ctx, indices, i, table.shape[0]);
    std::memcpy(result + i * rowBytes, rows + row * rowBytes, rowBytes);
  }
  return Status::success();
}

Status runScatterAdd(const KernelContext &ctx) {
  const TensorType &table = ctx.operandType(0), &indices = ctx.operandType(1);
  const TensorType &updates = ctx.operandType(2), &out = ctx.resultType(0);
  if (Status s = checkIndices(ctx, table, indices); !s)
    return s;
  if (out.dtype != table.dtype || out.shape != table.shape)
    return ctx.error("result " + describe(out) + " does not match table " +
                     describe(table));
  std::vector<int64_t> expected = rowsShape(table, indices);
  if (updates.dtype != table.dtype || updates.shape != expected)
    return ctx.error("updates must be " + std::string(dtypeName(table.dtype)) +
                     formatShape(expected) + ", got " + describe(updates));
  return visitDType(table.dtype, [&](auto tag) -> Status {
    using Storage = decltype(tag);
    using Traits = ElementTraits<Storage>;
    if constexpr (Traits::isBool) {
      return ctx.unsupported(table.dtype);
    } else {
      if (ctx.result(0) != ctx.operand(0) && table.bytes() > 0)
        std::memmove(ctx.result(0), ctx.operand(0), table.bytes());
      if (table.shape[0] == 0)
        return Status::success();
      int64_t rowElements = table.numElements() / table.shape[0];
      Storage *result = ctx.result<Storage>(0);
      const Storage *adds = ctx.operand<Storage>(2);
      int64_t count = indices.numElements();
      for (int64_t i = 0; i < count; ++i) {
        Storage *row =
            result + clampedRow(ctx, indices, i, table.shape[0]) * rowElements;
        const Storage *add = adds + i * rowElements;
        for (int64_t j = 0; j < rowElements; ++j) {
          row[j] = Traits::store(
              wrappingAdd(Traits::load(row[j]), Traits::load(add[j])));
        }
      }
      return Status::success();
    }
  });
}

} // namespace cpu
} // namespace partita
