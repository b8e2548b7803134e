//===- Files.cpp - Reading and writing files safely -----------------------===//

#include "partita/Runtime/IO/Files.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace partita {

namespace {

/// Writes all of `bytes` to `fd`; false with errno set on failure.
bool writeAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    done += static_cast<size_t>(wrote);
  }
  return true;
}

Status failure(const std::string &path, int error) {
  return Status::error("cannot write '" + path + "': " + std::strerror(error));
}

} // namespace

Status requireRegularFile(const std::string &path) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status) ||
      std::filesystem::is_regular_file(status))
    return Status::success();
  const char *kind = std::filesystem::is_directory(status) ? "a directory"
                     : std::filesystem::is_fifo(status)     ? "a FIFO"
                     : std::filesystem::is_character_file(status) ||
                             std::filesystem::is_block_file(status)
                         ? "a device"
                         : "not a regular file";
  return Status::error("is " + std::string(kind) + ", expected a regular file");
}

Expected<std::string> readWholeFile(const std::string &path) {
  if (Status regular = requireRegularFile(path); !regular)
    return Status::error(path + ": " + regular.message());
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::string contents;
  char buffer[1 << 16];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    contents.append(buffer, got);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed)
    return Status::error(path + ": read error");
  return contents;
}

Status writeFileAtomically(const std::string &path, std::string_view bytes,
                           FileSync sync) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) &&
      std::filesystem::is_directory(status))
    return Status::error("cannot write '" + path + "': is a directory");
  if (std::filesystem::exists(status) &&
      !std::filesystem::is_regular_file(status)) {
    // A device or FIFO: there is nothing to replace, only to write.
    int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0)
      return failure(path, errno);
    bool ok = writeAll(fd, bytes);
    int saved = errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      saved = errno;
    }
    return ok ? Status::success() : failure(path, saved);
  }

  std::filesystem::path target(path);
  std::filesystem::path directory = target.parent_path();
  std::string pattern =
      (directory.empty() ? std::filesystem::path(".") : directory) /
      ("." + target.filename().string() + ".tmp.XXXXXX");
  std::string temporary = pattern;
  int fd = ::mkstemp(temporary.data());
  if (fd < 0)
    return failure(path, errno);
  // mkstemp creates the file readable by its owner only; a replaced file
  // should look like any other new file.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  bool ok = writeAll(fd, bytes) &&
            (sync == FileSync::Caller || ::fsync(fd) == 0);
  int saved = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && std::rename(temporary.c_str(), path.c_str()) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    ::unlink(temporary.c_str());
    return failure(path, saved);
  }
  return Status::success();
}

namespace {

const std::array<uint32_t, 256> &crc32cTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> entries{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      entries[i] = c;
    }
    return entries;
  }();
  return table;
}

/// A linear map on CRC-32C registers (GF(2)^32): column i is the image of
/// bit i.
struct CrcOperator {
  std::array<uint32_t, 32> column{};

  uint32_t apply(uint32_t value) const {
    uint32_t result = 0;
    for (int i = 0; value; ++i, value >>= 1)
      if (value & 1)
        result ^= column[i];
    return result;
  }
  /// This map after `first`.
  CrcOperator after(const CrcOperator &first) const {
    CrcOperator composed;
    for (int i = 0; i < 32; ++i)
      composed.column[i] = apply(first.column[i]);
    return composed;
  }
};

/// What feeding `bytes` zero bytes does to a CRC-32C register: a register
/// r followed by data D of n bytes ends as zeros(n)(r) ^ crc(D from 0),
/// which lets independent streams of data be joined.
CrcOperator zeroBytes(size_t bytes) {
  CrcOperator bit; // One zero bit: shift right, the polynomial if a 1 left.
  bit.column[0] = 0x82F63B78u;
  for (int i = 1; i < 32; ++i)
    bit.column[i] = 1u << (i - 1);
  CrcOperator power = bit.after(bit).after(bit.after(bit));
  power = power.after(power); // Eight bits.
  CrcOperator result;
  for (int i = 0; i < 32; ++i)
    result.column[i] = 1u << i;
  for (; bytes; bytes >>= 1, power = power.after(power))
    if (bytes & 1)
      result = power.after(result);
  return result;
}

#if defined(__x86_64__)
/// The bytes of each of the three interleaved streams of crc32cWide().
constexpr size_t kStreamBytes = 4096;

__attribute__((target("sse4.2"))) uint32_t
crc32cInstruction(const uint8_t *data, size_t size, uint32_t crc);

/// crc32cInstruction() three streams at a time: the instruction takes
/// three cycles and issues every cycle, so three independent chains of
/// kStreamBytes run in the time of one and are joined with zeroBytes()
/// (bench/checkpoint.py: a checkpoint's checksums took a sixth of its
/// write as one chain).
__attribute__((target("sse4.2"))) uint32_t
crc32cWide(const uint8_t *data, size_t size, uint32_t crc) {
  static const CrcOperator one = zeroBytes(kStreamBytes),
                           two = zeroBytes(2 * kStreamBytes),
                           three = zeroBytes(3 * kStreamBytes);
  for (; size >= 3 * kStreamBytes;
       data += 3 * kStreamBytes, size -= 3 * kStreamBytes) {
    uint64_t a = 0, b = 0, c = 0;
    for (size_t i = 0; i < kStreamBytes; i += 8) {
      uint64_t wa, wb, wc;
      std::memcpy(&wa, data + i, 8);
      std::memcpy(&wb, data + kStreamBytes + i, 8);
      std::memcpy(&wc, data + 2 * kStreamBytes + i, 8);
      a = __builtin_ia32_crc32di(a, wa);
      b = __builtin_ia32_crc32di(b, wb);
      c = __builtin_ia32_crc32di(c, wc);
    }
    crc = three.apply(crc) ^ two.apply(static_cast<uint32_t>(a)) ^
          one.apply(static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(c);
  }
  return crc32cInstruction(data, size, crc);
}

__attribute__((target("sse4.2"))) uint32_t
crc32cInstruction(const uint8_t *data, size_t size, uint32_t crc) {
  uint64_t wide = crc;
  for (; size >= 8; data += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);
    wide = __builtin_ia32_crc32di(wide, word);
  }
  crc = static_cast<uint32_t>(wide);
  for (; size > 0; ++data, --size)
    crc = __builtin_ia32_crc32qi(crc, *data);
  return crc;
}
#endif

} // namespace

uint32_t crc32c(const uint8_t *data, size_t size, uint32_t crc) {
  crc = ~crc;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2"))
    return ~crc32cWide(data, size, crc);
#endif
  const std::array<uint32_t, 256> &table = crc32cTable();
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

} // namespace partita
