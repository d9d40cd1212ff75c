#include "http/request_id.h"

#include <atomic>
#include <charconv>
#include <cstdint>

#include "common/random.h"
#include "http/parse_syntax.h"

namespace tw::http {

bool ValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
  for (char c : id) {
    if (!IsVchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string NewRequestId() {
  static const std::string prefix = RandomHex(8);  // made once, on first use
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1, std::memory_order_relaxed) + 1;
  char hex[16];
  auto r = std::to_chars(hex, hex + sizeof hex, n, 16);
  return prefix + "-" + std::string(hex, r.ptr);
}

std::string RequestIdFor(std::string_view client_id) {
  return ValidRequestId(client_id) ? std::string(client_id) : NewRequestId();
}

}  // namespace tw::http
