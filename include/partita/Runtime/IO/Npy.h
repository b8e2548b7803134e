//===- Npy.h - Reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// Data enters and leaves Partita programs as .npy files (docs/Runtime.md). We read
// format versions 1.0, 2.0 and 3.0 and write 1.0 with the header laid out as
// numpy lays it out, so a file that went through Partita unchanged compares
// byte-for-byte with numpy's. Only little-endian, C-order arrays of the
// DTypes in HostArray.h are supported. bfloat16 is stored as ml_dtypes
// stores it: numpy has no bfloat16, so np.save writes the descr '<V2'
// (two opaque bytes), and we read any two-byte void descr as bf16.
//
// Files are untrusted input: every malformed header, unsupported type or
// short data section is a failure whose message starts with the file name.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_NPY_H
#define PARTITA_RUNTIME_NPY_H

#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/HostArray.h"

#include <string>
#include <string_view>

namespace partita {

/// The numpy descr we write for `dtype`: "<f4", "|b1", "<V2" (bf16), ...
const char *npyDescr(DType dtype);

/// The dtype of a numpy descr; '|' and '=' mean the same as '<' here, and a
/// one-byte type may carry any byte order. Fails on big-endian data and on
/// types Partita does not have, listing the ones it has.
Expected<DType> dtypeFromDescr(const std::string &descr);

/// Parses the contents of a .npy file. `name` prefixes failure messages
/// ("name: what is wrong"); it is usually the file's path.
Expected<HostArray> parseNpy(std::string_view contents, std::string_view name);

/// Reads and parses the .npy file at `path`.
/// With `crc`, also the CRC-32C of the file's bytes.
Expected<HostArray> readNpy(const std::string &path, uint32_t *crc = nullptr);

/// The bytes of a version 1.0 .npy file holding `array`; fails when the
/// array's bytes do not match its shape or the header would not fit 1.0.
Expected<std::string> serializeNpy(const HostArray &array);

/// Writes `array` to `path` as a version 1.0 .npy file.
/// With `crc`, also the CRC-32C of the bytes written.
Status writeNpy(const std::string &path, const HostArray &array,
                FileSync sync = FileSync::EachFile, uint32_t *crc = nullptr);

} // namespace partita

#endif // PARTITA_RUNTIME_NPY_H
