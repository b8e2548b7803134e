//===- Files.h - Reading and writing files safely ---------------*- C++ -*-===//
//
// What every reader and writer of the runtime and the tools does with paths
// (docs/Runtime.md, "Files"): a reader refuses anything but a regular file
// before reading; a writer replaces a file atomically, so a failed write
// leaves the old file as it was.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_IO_FILES_H
#define PARTITA_RUNTIME_IO_FILES_H

#include "partita/Sharding/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace partita {

/// Fails ("is a directory, expected a regular file"; callers name the
/// path) when `path` exists but is not a regular file: reading a directory
/// throws inside the stream buffer, a device such as /dev/zero never ends
/// and a FIFO waits for a writer. A missing path passes (opening it reports
/// that).
Status requireRegularFile(const std::string &path);

/// The bytes of the regular file `path`; errors start with the path
/// ("x.npy: cannot open: No such file or directory").
Expected<std::string> readWholeFile(const std::string &path);

/// CRC-32C (Castagnoli; as iSCSI, ext4 and gRPC use it) of `size` bytes,
/// continuing from `crc` (0 to start): the SSE4.2 instruction where the CPU
/// has it (several GB/s), a table otherwise. Checkpoints record it per file.
uint32_t crc32c(const uint8_t *data, size_t size, uint32_t crc = 0);

/// When a written file reaches the disk: before the write returns (fsync),
/// or when the caller syncs a whole set of files at once (a checkpoint's
/// hundreds of shard files: one sync instead of one per file).
enum class FileSync { EachFile, Caller };

/// Writes `bytes` to `path`. A regular file (or a new one) is written to a
/// temporary file in the same directory, flushed, synced and renamed over
/// `path`: a failed write leaves no partial file and the old file intact.
/// An existing device or FIFO (/dev/stdout, /dev/null) is written in place.
/// Errors name the path and the system's reason ("No space left on
/// device").
Status writeFileAtomically(const std::string &path, std::string_view bytes,
                           FileSync sync = FileSync::EachFile);

} // namespace partita

#endif // PARTITA_RUNTIME_IO_FILES_H
