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

#if defined(__x86_64__)
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
    return ~crc32cInstruction(data, size, crc);
#endif
  const std::array<uint32_t, 256> &table = crc32cTable();
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

} // namespace partita
