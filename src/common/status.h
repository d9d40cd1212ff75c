// Status: the one error mechanism of library code (leveldb style).
//
// A Status is either OK or carries a human-readable message that names what
// failed and why (the system call and strerror(errno), the tensor and its
// expected shape, the byte offset in the input). Library code returns Status
// or fills an out-parameter; it never throws and never exits. Only the
// command-line entry points (src/main.cc, app::GenerateMain in
// src/app/generate_cli.cc, weights_tool/main.cc) turn a failed Status into
// an exit code.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace tw {

class Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }
  // "call: strerror(errno)" for a failed system call; reads errno.
  static Status FromErrno(std::string_view call);

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

}  // namespace tw
