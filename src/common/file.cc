#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace tw {

Status ReadFileBounded(const std::string& path, size_t max_bytes, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    Status s = Status::FromErrno("fstat " + path);
    close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Error(path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    return Status::Error(path + ": " + std::to_string(st.st_size) + " bytes, over the limit of " +
                         std::to_string(max_bytes) + " bytes");
  }
  out->assign(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::FromErrno("read " + path);
      close(fd);
      return s;
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  close(fd);
  return Status::Ok();
}

}  // namespace tw
