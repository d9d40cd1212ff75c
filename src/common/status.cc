#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace tw {

Status Status::FromErrno(std::string_view call) {
  int err = errno;
  std::string m(call);
  m += ": ";
  m += std::strerror(err);
  return Status(std::move(m));
}

}  // namespace tw
