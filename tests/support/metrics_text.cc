#include "support/metrics_text.h"

#include "client/http_client.h"

namespace tw::testing {

std::string FetchMetrics(uint16_t port) {
  client::Request req;
  req.target = "/metrics";
  client::Response m;
  return client::Fetch(port, req, &m).ok() ? m.body : "";
}

int64_t MetricValue(const std::string& text, const std::string& name) {
  // A sample line starts a line ("# HELP name ..." does not start with the name).
  const std::string line_start = name + " ";
  size_t from = std::string::npos;
  if (text.compare(0, line_start.size(), line_start) == 0) {
    from = line_start.size();
  } else if (size_t at = text.find("\n" + line_start); at != std::string::npos) {
    from = at + 1 + line_start.size();
  }
  return from == std::string::npos ? -1 : std::stoll(text.substr(from));
}

}  // namespace tw::testing
