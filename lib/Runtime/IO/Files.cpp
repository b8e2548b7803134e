//===- Files.cpp - Reading and writing files safely -----------------------===//

#include "partita/Runtime/IO/Files.h"

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

Status writeFileAtomically(const std::string &path, std::string_view bytes) {
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
  bool ok = writeAll(fd, bytes) && ::fsync(fd) == 0;
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

} // namespace partita
