//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// A .npy file is a magic string, a version, a header length, a header that
// is the text of a Python dict literal ({'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), }) padded with spaces and a newline, then the raw
// elements. The reader parses the dict with a small recursive-descent parser
// that accepts what numpy writes (and the 'L' suffixes of Python 2 files);
// it never evaluates anything.
//
//===----------------------------------------------------------------------===//
#include "partita/Runtime/IO/Npy.h"
#include "partita/Runtime/IO/Files.h"
#include "partita/Runtime/IO/ShardedArray.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace partita {

namespace {

constexpr char npyMagic[] = "\x93NUMPY";
constexpr size_t npyMagicLength = 6;
/// numpy pads the header so the data starts on this boundary.
constexpr size_t npyAlignment = 64;
/// numpy leaves room in the header for a first dimension of this many digits
/// so the shape can grow in place; we do the same so files match numpy's.
constexpr size_t npyGrowthDigits = 21;

struct DescrInfo {
  const char *descr;
  DType dtype;
};

const DescrInfo descrTable[] = {
    {"<f8", DType::F64},  {"<f4", DType::F32}, {"<f2", DType::F16},
    {"<V2", DType::BF16}, {"<i8", DType::I64}, {"<i4", DType::I32},
    {"<i2", DType::I16},  {"|i1", DType::I8},  {"|u1", DType::U8},
    {"|b1", DType::Bool},
    // Read only: unsigned arrays (JAX's uint32 step counters, random keys)
    // are held in the signed type of their width, bit for bit, as the
    // importer types them (docs/JAX.md).
    {"<u8", DType::I64},  {"<u4", DType::I32}, {"<u2", DType::I16},
};

/// The fields of a parsed header.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Recursive-descent parser for the header dict. Failures carry only the
/// problem; the caller adds the file name.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  Expected<NpyHeader> parse() {
    NpyHeader header;
    bool seenDescr = false, seenOrder = false, seenShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a dict (expected '{')");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      Expected<std::string> key = parseString();
      if (!key)
        return key.status();
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + *key + "'");
      skipSpace();
      // Python's dict literal keeps the last of a repeated key; a header
      // that repeats one was not written by numpy, and the later value
      // decided the data's size ("188 unexpected bytes").
      if ((*key == "descr" && seenDescr) ||
          (*key == "fortran_order" && seenOrder) ||
          (*key == "shape" && seenShape))
        return fail("the header gives '" + *key + "' twice");
      if (*key == "descr") {
        if (peek() == '[')
          return fail("structured dtypes (a descr list) are not supported");
        Expected<std::string> descr = parseString();
        if (!descr)
          return descr.status();
        header.descr = *descr;
        seenDescr = true;
      } else if (*key == "fortran_order") {
        Expected<bool> order = parseBool();
        if (!order)
          return order.status();
        header.fortranOrder = *order;
        seenOrder = true;
      } else if (*key == "shape") {
        Expected<std::vector<int64_t>> shape = parseShape();
        if (!shape)
          return shape.status();
        header.shape = std::move(*shape);
        seenShape = true;
      } else {
        return fail("unexpected key '" + *key + "' in the header");
      }
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return fail("expected ',' or '}' after the value of '" + *key + "'");
    }
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the header dict");
    if (!seenDescr || !seenOrder || !seenShape)
      return fail(std::string("the header has no '") +
                  (!seenDescr   ? "descr"
                   : !seenOrder ? "fortran_order"
                                : "shape") +
                  "' entry");
    return header;
  }

private:
  Status fail(const std::string &message) const {
    return Status::error(message + " (header offset " + std::to_string(pos) +
                         ")");
  }
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  bool consume(char c) {
    if (pos >= text.size() || text[pos] != c)
      return false;
    ++pos;
    return true;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' ||
                                 text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  Expected<std::string> parseString() {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return fail("expected a quoted string");
    size_t close = text.find(quote, pos + 1);
    if (close == std::string_view::npos)
      return fail("unterminated string");
    std::string value(text.substr(pos + 1, close - pos - 1));
    pos = close + 1;
    return value;
  }

  Expected<bool> parseBool() {
    if (consumeWord("True"))
      return true;
    if (consumeWord("False"))
      return false;
    return fail("expected True or False");
  }

  Expected<int64_t> parseDimension() {
    size_t start = pos;
    int64_t value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      int digit = text[pos] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return fail("dimension too large");
      value = value * 10 + digit;
      ++pos;
    }
    if (pos == start)
      return fail("expected a non-negative integer dimension");
    consume('L'); // Python 2 long literal.
    return value;
  }

  Expected<std::vector<int64_t>> parseShape() {
    std::vector<int64_t> shape;
    if (!consume('('))
      return fail("expected a tuple for 'shape'");
    skipSpace();
    if (consume(')'))
      return shape;
    while (true) {
      Expected<int64_t> dim = parseDimension();
      if (!dim)
        return dim.status();
      shape.push_back(*dim);
      skipSpace();
      bool comma = consume(',');
      skipSpace();
      if (consume(')'))
        return shape;
      if (!comma)
        return fail("expected ',' or ')' in 'shape'");
    }
  }

  std::string_view text;
  size_t pos = 0;
};

std::string supportedDescrs() {
  std::string list;
  for (const DescrInfo &info : descrTable) {
    list += list.empty() ? "" : ", ";
    list += info.descr;
  }
  return list + " ('<V2' is bfloat16 as ml_dtypes saves it)";
}

} // namespace

Expected<DType> dtypeFromDescr(const std::string &descr) {
  if (descr.size() < 2)
    return Status::error("unsupported dtype descr '" + descr + "'");
  char order = descr[0];
  std::string body = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '|';
    body = descr;
  }
  for (const DescrInfo &info : descrTable) {
    if (body != info.descr + 1)
      continue;
    if (order == '>' && dtypeSize(info.dtype) > 1)
      return Status::error("big-endian data ('" + descr +
                           "') is not supported; save a little-endian array, "
                           "e.g. a.astype(a.dtype.newbyteorder('<'))");
    return info.dtype;
  }
  return Status::error("unsupported dtype descr '" + descr +
                       "'; supported: " + supportedDescrs());
}

namespace {

uint32_t readLittleEndian(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i]))
             << (8 * i);
  return value;
}

/// numpy's spelling of a shape tuple: "()", "(3,)", "(2, 3)".
std::string pythonTuple(const std::vector<int64_t> &shape) {
  return "(" + joinDims(shape) + (shape.size() == 1 ? ",)" : ")");
}

} // namespace

const char *npyDescr(DType dtype) {
  for (const DescrInfo &info : descrTable)
    if (info.dtype == dtype)
      return info.descr;
  return "?";
}

Expected<NpyLayout> parseNpyLayout(std::string_view prefix, uint64_t fileSize,
                                   std::string_view name) {
  std::string start = std::string(name) + ": ";
  auto fail = [&](const std::string &message) {
    return Status::error(start + message);
  };
  if (prefix.size() < npyMagicLength ||
      prefix.substr(0, npyMagicLength) !=
          std::string_view(npyMagic, npyMagicLength))
    return fail("not a .npy file (missing the \\x93NUMPY magic string)");
  if (prefix.size() < npyMagicLength + 2)
    return fail("truncated before the format version");
  int major = static_cast<uint8_t>(prefix[6]);
  int minor = static_cast<uint8_t>(prefix[7]);
  if (minor != 0 || major < 1 || major > 3)
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = npyMagicLength + 2 + lengthWidth;
  if (prefix.size() < headerStart)
    return fail("truncated before the header length");
  size_t headerLength = readLittleEndian(prefix, 8, lengthWidth);
  if (fileSize - headerStart < headerLength ||
      prefix.size() - headerStart < headerLength)
    return fail("truncated header: it declares " +
                std::to_string(headerLength) + " bytes but the file has " +
                std::to_string(fileSize - headerStart));
  Expected<NpyHeader> header =
      HeaderParser(prefix.substr(headerStart, headerLength)).parse();
  if (!header)
    return fail("bad header: " + header.status().message());

  Expected<DType> dtype = dtypeFromDescr(header->descr);
  if (!dtype)
    return fail(dtype.status().message());
  // Column-major and row-major layouts coincide below rank 2.
  if (header->fortranOrder && header->shape.size() > 1)
    return fail("fortran_order is True (column-major data), which is not "
                "supported; save a C-ordered array, e.g. "
                "np.save(path, np.ascontiguousarray(a))");
  Expected<int64_t> byteCount = checkedNumBytes(*dtype, header->shape);
  if (!byteCount)
    return fail(byteCount.status().message());
  uint64_t dataBytes = static_cast<uint64_t>(*byteCount);
  uint64_t available = fileSize - headerStart - headerLength;
  if (available < dataBytes)
    return fail("data too short: a " + std::string(dtypeName(*dtype)) +
                " array of shape " + formatShape(header->shape) + " needs " +
                std::to_string(dataBytes) + " bytes but the file has " +
                std::to_string(available));
  if (available > dataBytes)
    return fail(std::to_string(available - dataBytes) +
                " unexpected bytes after the data");
  NpyLayout layout;
  layout.dtype = *dtype;
  layout.shape = std::move(header->shape);
  layout.dataOffset = static_cast<int64_t>(headerStart + headerLength);
  return layout;
}

Expected<HostArray> parseNpy(std::string_view contents, std::string_view name) {
  Expected<NpyLayout> layout = parseNpyLayout(contents, contents.size(), name);
  if (!layout)
    return layout.status();
  HostArray array;
  array.dtype = layout->dtype;
  array.shape = std::move(layout->shape);
  const char *data = contents.data() + layout->dataOffset;
  array.bytes.assign(data, contents.data() + contents.size());
  return array;
}

Expected<HostArray> readNpy(const std::string &path, uint32_t *crc) {
  Expected<std::string> read = readWholeFile(path);
  if (!read)
    return read.status();
  const std::string &contents = *read;
  if (crc)
    *crc = crc32c(reinterpret_cast<const uint8_t *>(contents.data()),
                  contents.size());
  return parseNpy(contents, path);
}

namespace {

/// The header numpy writes for an array of `dtype` and `shape` (version
/// 1.0, or 2.0 when the dict does not fit 1.0's two-byte length).
std::string npyHeader(DType dtype, const std::vector<int64_t> &shape) {
  std::string dict =
      std::string("{'descr': '") + npyDescr(dtype) +
      "', 'fortran_order': False, 'shape': " + pythonTuple(shape) + ", }";
  if (!shape.empty()) {
    size_t digits = std::to_string(shape[0]).size();
    if (digits < npyGrowthDigits)
      dict.append(npyGrowthDigits - digits, ' ');
  }
  // Version 1.0 stores the header length in two bytes; 2.0 in four.
  size_t lengthWidth = 2;
  size_t unpadded = npyMagicLength + 2 + lengthWidth + dict.size() + 1;
  size_t padding = npyAlignment - unpadded % npyAlignment;
  if (dict.size() + 1 + padding > 0xffff) {
    lengthWidth = 4;
    unpadded += 2;
    padding = npyAlignment - unpadded % npyAlignment;
  }
  size_t headerLength = dict.size() + padding + 1;

  std::string out(npyMagic, npyMagicLength);
  out += static_cast<char>(lengthWidth == 2 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < lengthWidth; ++i)
    out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += dict;
  out.append(padding, ' ');
  out += '\n';
  return out;
}

} // namespace

Expected<std::string> serializeNpy(const HostArray &array) {
  if (Status consistent = array.checkConsistent(); !consistent)
    return consistent;
  std::string out = npyHeader(array.dtype, array.shape);
  out.append(reinterpret_cast<const char *>(array.bytes.data()),
             array.bytes.size());
  return out;
}

Status writeNpy(const std::string &path, const HostArray &array,
                FileSync sync, uint32_t *crc) {
  Expected<std::string> contents = serializeNpy(array);
  if (!contents)
    return Status::error(path + ": " + contents.status().message());
  if (crc)
    *crc = crc32c(reinterpret_cast<const uint8_t *>(contents->data()),
                  contents->size());
  return writeFileAtomically(path, *contents, sync);
}

namespace {

/// `path`: the system's reason for the last failure.
Status systemFailure(const std::string &path, const char *what) {
  return Status::error(path + ": " + what + ": " + std::strerror(errno));
}

/// Reads (`write` false) or writes exactly `size` bytes at `offset` of
/// `fd`.
bool transferAt(int fd, uint8_t *at, int64_t size, int64_t offset, bool write) {
  while (size > 0) {
    ssize_t moved = write ? ::pwrite(fd, at, static_cast<size_t>(size), offset)
                          : ::pread(fd, at, static_cast<size_t>(size), offset);
    if (moved < 0 && errno == EINTR)
      continue;
    if (moved <= 0)
      return false;
    at += moved, size -= moved, offset += moved;
  }
  return true;
}

bool readAt(int fd, void *into, int64_t size, int64_t offset) {
  return transferAt(fd, static_cast<uint8_t *>(into), size, offset, false);
}

bool writeAt(int fd, const void *from, int64_t size, int64_t offset) {
  // pwrite only reads the buffer.
  return transferAt(fd,
                    const_cast<uint8_t *>(static_cast<const uint8_t *>(from)),
                    size, offset, true);
}

/// A file descriptor closed when it goes out of scope.
struct OpenFile {
  int fd = -1;
  ~OpenFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Checks that `ranges` lie within `shape` and fit `paddedShape`.
Status checkRegion(const std::string &path, const std::vector<int64_t> &shape,
                   const std::vector<IndexRange> &ranges,
                   const std::vector<int64_t> &paddedShape) {
  bool fits =
      ranges.size() == shape.size() && paddedShape.size() == shape.size();
  for (size_t d = 0; fits && d < shape.size(); ++d)
    fits = ranges[d].begin >= 0 && ranges[d].begin <= ranges[d].end &&
           ranges[d].end <= shape[d] && ranges[d].size() <= paddedShape[d];
  if (!fits)
    return Status::error(path + ": the block " + formatRanges(ranges) +
                         " is not within the array's shape " +
                         formatShape(shape));
  return Status::success();
}

} // namespace

Expected<NpyLayout> readNpyLayout(const std::string &path) {
  if (Status regular = requireRegularFile(path); !regular)
    return Status::error(path + ": " + regular.message());
  OpenFile file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0)
    return systemFailure(path, "cannot open");
  struct stat info;
  if (::fstat(file.fd, &info) != 0)
    return systemFailure(path, "cannot stat");
  auto size = static_cast<uint64_t>(info.st_size);
  // The header's length is in its first 12 bytes; read what it declares.
  std::string prefix(std::min<uint64_t>(size, 12), '\0');
  if (!readAt(file.fd, prefix.data(), static_cast<int64_t>(prefix.size()), 0))
    return systemFailure(path, "read error");
  size_t needed = prefix.size();
  if (prefix.size() >= 10 &&
      prefix.compare(0, npyMagicLength,
                     std::string(npyMagic, npyMagicLength)) == 0) {
    size_t width = static_cast<uint8_t>(prefix[6]) == 1 ? 2 : 4;
    if (prefix.size() >= 8 + width)
      needed = 8 + width + readLittleEndian(prefix, 8, width);
  }
  prefix.resize(std::min<uint64_t>(needed, size));
  if (!readAt(file.fd, prefix.data(), static_cast<int64_t>(prefix.size()), 0))
    return systemFailure(path, "read error");
  return parseNpyLayout(prefix, size, path);
}

Status readNpyRegionInto(const std::string &path, const NpyLayout &layout,
                         const std::vector<IndexRange> &ranges,
                         const std::vector<int64_t> &paddedShape,
                         uint8_t *into) {
  if (Status fits = checkRegion(path, layout.shape, ranges, paddedShape); !fits)
    return fits;
  OpenFile file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0)
    return systemFailure(path, "cannot open");
  int64_t size = dtypeSize(layout.dtype);
  return forEachRegionRow(
      ranges, layout.shape, paddedShape,
      [&](int64_t global, int64_t local, int64_t length) {
        if (!readAt(file.fd, into + local * size, length * size,
                    layout.dataOffset + global * size))
          return Status::error(path + ": read error (the file changed?)");
        return Status::success();
      });
}

Expected<HostArray> readNpyRegion(const std::string &path,
                                  const NpyLayout &layout,
                                  const std::vector<IndexRange> &ranges,
                                  const std::vector<int64_t> &paddedShape) {
  HostArray block = HostArray::zeros(layout.dtype, paddedShape);
  if (Status read = readNpyRegionInto(path, layout, ranges, paddedShape,
                                      block.bytes.data());
      !read)
    return read;
  return block;
}

Expected<std::unique_ptr<NpyRegionWriter>>
NpyRegionWriter::create(const std::string &path, DType dtype,
                        const std::vector<int64_t> &shape) {
  std::unique_ptr<NpyRegionWriter> writer(new NpyRegionWriter());
  writer->path = path;
  writer->temporary = path + ".partial";
  writer->layout.dtype = dtype;
  writer->layout.shape = shape;
  Expected<int64_t> bytes = checkedNumBytes(dtype, shape);
  if (!bytes)
    return Status::error(path + ": " + bytes.status().message());
  std::string header = npyHeader(dtype, shape);
  writer->layout.dataOffset = static_cast<int64_t>(header.size());
  writer->fd = ::open(writer->temporary.c_str(),
                      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (writer->fd < 0)
    return systemFailure(writer->temporary, "cannot create");
  if (!writeAt(writer->fd, header.data(), static_cast<int64_t>(header.size()),
               0) ||
      ::ftruncate(writer->fd, writer->layout.dataOffset + *bytes) != 0)
    return systemFailure(writer->temporary, "cannot write");
  return writer;
}

NpyRegionWriter::~NpyRegionWriter() {
  if (fd >= 0) {
    ::close(fd);
    ::unlink(temporary.c_str());
  }
}

Status NpyRegionWriter::write(const std::vector<IndexRange> &ranges,
                              const HostArray &block) {
  if (block.dtype != layout.dtype)
    return Status::error(path + ": a block of another dtype");
  if (Status fits = checkRegion(path, layout.shape, ranges, block.shape); !fits)
    return fits;
  int64_t size = dtypeSize(layout.dtype);
  return forEachRegionRow(ranges, layout.shape, block.shape,
                          [&](int64_t global, int64_t local, int64_t length) {
                            if (!writeAt(fd, block.bytes.data() + local * size,
                                         length * size,
                                         layout.dataOffset + global * size))
                              return systemFailure(temporary, "cannot write");
                            return Status::success();
                          });
}

Status NpyRegionWriter::finish() {
  int done = fd;
  fd = -1;
  if (::fsync(done) != 0 || ::close(done) != 0) {
    Status failure = systemFailure(temporary, "cannot write");
    ::unlink(temporary.c_str());
    return failure;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    Status failure = systemFailure(path, "cannot rename the written file to");
    ::unlink(temporary.c_str());
    return failure;
  }
  return Status::success();
}

} // namespace partita
