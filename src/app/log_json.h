// --log-format json: each log record as one JSON object on one line (JSON
// lines, what log shippers read), written with json::Writer like every other
// JSON the server emits:
//
//   {"ts":"2026-12-02T00:01:17.123Z","level":"info","event":"access","method":"GET",...}
//
// The record's fields follow "ts", "level" and "event" in their order, with
// their types (strings, integers, numbers, booleans); absent fields are left
// out. Installed as LogOptions::format by the App.
#pragma once

#include <string>

#include "common/log.h"

namespace tw::app {

void FormatLogJson(const LogRecord& r, std::string* out);

}  // namespace tw::app
