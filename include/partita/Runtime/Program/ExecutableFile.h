//===- ExecutableFile.h - The Executable on disk ----------------*- C++ -*-===//
//
// A self-contained, versioned binary form of an Executable, so a program
// compiled once runs anywhere partita-exec runs (no MLIR needed):
//
//   "PARTEXE\0" magic, u32 format version,
//   mesh (axes with sizes, device ids), slot types, inputs and outputs
//   (slot, name, global shape, sharding, role, u8 donated, i32 aliased input),
//   instructions (op code, operand
//   and result slots, integer and text attributes), the buffer plan (each
//   slot's offset in the arena, the arena's bytes), constants (dtype,
//   shape, raw bytes), and a trailing u64 FNV-1a checksum of everything
//   before it. Integers are little-endian; strings are u32 length + bytes.
//
// The reader checks every length against the bytes left, the version, the
// checksum, and that every slot, op code, dtype and constant index is in
// range, so a truncated, corrupt or foreign file gives a clear error.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_EXECUTABLEFILE_H
#define PARTITA_RUNTIME_EXECUTABLEFILE_H

#include "partita/Runtime/Program/Executable.h"

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

/// The format version this build writes and reads (3: the checksum is
/// standard FNV-1a 64; version 2's had another offset basis).
constexpr uint32_t kExecutableFormatVersion = 3;

/// The file's checksum: FNV-1a, 64 bits (offset basis 14695981039346656037,
/// prime 1099511628211), over every byte before it.
uint64_t executableChecksum(const uint8_t *data, size_t size);

/// The bytes of `program` in the file format.
std::vector<uint8_t> serializeExecutable(const Executable &program);

/// Parses and validates the file format; `source` names the input in
/// messages.
Expected<Executable> deserializeExecutable(const std::vector<uint8_t> &bytes,
                                           const std::string &source);

/// Writes `program` to `path`.
Status writeExecutableFile(const Executable &program, const std::string &path);

/// Reads and validates the Executable at `path`.
Expected<Executable> readExecutableFile(const std::string &path);

/// True when `bytes` start with the Executable magic.
bool looksLikeExecutable(const std::vector<uint8_t> &bytes);

} // namespace partita

#endif // PARTITA_RUNTIME_EXECUTABLEFILE_H
