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
#include "partita/Sharding/Layout.h"

#include <memory>

#include <string>
#include <string_view>

namespace partita {

/// The numpy descr we write for `dtype`: "<f4", "|b1", "<V2" (bf16), ...
const char *npyDescr(DType dtype);

/// The dtype of a numpy descr; '|' and '=' mean the same as '<' here, and a
/// one-byte type may carry any byte order. Fails on big-endian data and on
/// types Partita does not have, listing the ones it has.
Expected<DType> dtypeFromDescr(const std::string &descr);

/// Where a .npy file's elements are: its dtype and shape, and the offset
/// of its first element (C order).
struct NpyLayout {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t dataOffset = 0;
};

/// The layout of a .npy file of `fileSize` bytes whose first bytes are
/// `prefix` (the whole header at least): every check parseNpy() makes but
/// on the elements themselves (the file's size must be the header's plus
/// the elements'). `name` prefixes failure messages.
Expected<NpyLayout> parseNpyLayout(std::string_view prefix, uint64_t fileSize,
                                   std::string_view name);

/// The layout of the .npy file at `path`, reading only its header.
Expected<NpyLayout> readNpyLayout(const std::string &path);

/// The elements of the .npy file at `path` (of `layout`) inside `ranges`
/// (one per dimension, within its shape), in an array of `paddedShape`
/// whose other elements are zero; only those bytes are read.
Expected<HostArray> readNpyRegion(const std::string &path,
                                  const NpyLayout &layout,
                                  const std::vector<IndexRange> &ranges,
                                  const std::vector<int64_t> &paddedShape);

/// readNpyRegion() into `into`, the zeroed bytes of an array of
/// `paddedShape`.
Status readNpyRegionInto(const std::string &path, const NpyLayout &layout,
                         const std::vector<IndexRange> &ranges,
                         const std::vector<int64_t> &paddedShape,
                         uint8_t *into);

/// A .npy file written a region at a time: the header and the file's full
/// size first, then each region's rows where they belong, then synced and
/// renamed over `path` by finish() (a run that fails leaves no partial
/// file; the destructor removes an unfinished one).
class NpyRegionWriter {
public:
  static Expected<std::unique_ptr<NpyRegionWriter>>
  create(const std::string &path, DType dtype,
         const std::vector<int64_t> &shape);
  ~NpyRegionWriter();
  /// Writes the leading ranges-sized corner of `block` at `ranges`.
  Status write(const std::vector<IndexRange> &ranges, const HostArray &block);
  Status finish();

private:
  NpyRegionWriter() = default;
  std::string path, temporary;
  int fd = -1;
  NpyLayout layout;
};

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
