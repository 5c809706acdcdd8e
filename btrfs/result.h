// Typed errors for the kernel-interface layer.
//
// Every call in btrfs/ returns Result<T>: either the value or an Error that
// carries the errno and a sentence naming what was being done (and to which
// file). The layer never throws and never prints; callers decide policy.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace btrfs {

struct Error {
  int code = 0;          // errno value (0 when the failure has no errno)
  std::string context;   // what was being done, e.g. "FIDEDUPERANGE on /mnt/a"

  // "context: strerror(code)", or just the context when code is 0.
  std::string message() const;
};

// Builds an Error from the current errno.
Error errno_error(std::string context);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}        // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result for calls that return nothing but may fail.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace btrfs
