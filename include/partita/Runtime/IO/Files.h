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

#include <string>
#include <string_view>

namespace partita {

/// Fails ("is a directory, expected a regular file"; callers name the
/// path) when `path` exists but is not a regular file: reading a directory
/// throws inside the stream buffer, a device such as /dev/zero never ends
/// and a FIFO waits for a writer. A missing path passes (opening it reports
/// that).
Status requireRegularFile(const std::string &path);

/// Writes `bytes` to `path`. A regular file (or a new one) is written to a
/// temporary file in the same directory, flushed, synced and renamed over
/// `path`: a failed write leaves no partial file and the old file intact.
/// An existing device or FIFO (/dev/stdout, /dev/null) is written in place.
/// Errors name the path and the system's reason ("No space left on
/// device").
Status writeFileAtomically(const std::string &path, std::string_view bytes);

} // namespace partita

#endif // PARTITA_RUNTIME_IO_FILES_H
