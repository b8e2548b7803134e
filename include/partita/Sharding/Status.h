//===- Status.h - Error values without exceptions ---------------*- C++ -*-===//
//
// The sharding algebra and the runtime are used from code built without
// exceptions (MLIR's) and from code that must not depend on LLVM (the
// runtime). They report failure through these two small types instead of
// llvm::Error or exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef PARTITA_SHARDING_STATUS_H
#define PARTITA_SHARDING_STATUS_H

#include <optional>
#include <string>
#include <utility>

namespace partita {

/// Success, or failure with a message meant for a user ("unknown mesh axis
/// 'x'; the mesh has axes data, model").
class [[nodiscard]] Status {
public:
  /// A successful status.
  Status() = default;
  /// A failed status with `message`.
  static Status error(std::string message) {
    return Status(std::move(message));
  }
  /// A successful status.
  static Status success() { return Status(); }

  /// True on success.
  bool ok() const { return !failed; }
  explicit operator bool() const { return ok(); }
  /// The failure message; empty on success.
  const std::string &message() const { return text; }

private:
  explicit Status(std::string message)
      : text(std::move(message)), failed(true) {}
  std::string text;
  bool failed = false;
};

/// A value of type T, or the Status explaining why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage(std::move(value)) {}
  Expected(Status failure) : error(std::move(failure)) {}

  /// True when a value is present.
  bool ok() const { return storage.has_value(); }
  explicit operator bool() const { return ok(); }
  /// The value; only call when ok().
  T &value() { return *storage; }
  const T &value() const { return *storage; }
  T &operator*() { return *storage; }
  const T &operator*() const { return *storage; }
  T *operator->() { return &*storage; }
  const T *operator->() const { return &*storage; }
  /// The failure; a successful Status when a value is present.
  const Status &status() const { return error; }

private:
  std::optional<T> storage;
  Status error;
};

} // namespace partita

#endif // PARTITA_SHARDING_STATUS_H
