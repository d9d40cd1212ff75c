// Reading a server's /metrics (Prometheus text) in tests: one scrape, and a
// sample's value by its exact name (with its labels, as written there).
#pragma once

#include <cstdint>
#include <string>

namespace tw::testing {

// GET /metrics on 127.0.0.1:port; "" if it failed.
std::string FetchMetrics(uint16_t port);
// The value of the sample `name` (e.g. "tokenwire_linger_cancels_total" or
// "tokenwire_streams_finished_total{outcome=\"cancelled\"}"); -1 if absent.
int64_t MetricValue(const std::string& text, const std::string& name);

}  // namespace tw::testing
