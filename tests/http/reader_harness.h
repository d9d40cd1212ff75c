// Test harness: feeds pieces of input to a RequestReader the way the server
// does (Feed, then Next until kNeedMore / kError) and records everything
// observable, so that the same input split differently can be compared.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/request_reader.h"

namespace tw::testing {

struct ReaderOutcome {
  std::vector<http::Request> requests;  // in order
  std::vector<std::string> continues;   // target of each kContinue head
  std::string events;                   // "C" / "R" per event, then "E" if error
  bool error = false;
  int status = 0;                       // error_status() when error
  std::string message;                  // error_message() when error
  bool closed = false;
  bool upgrade_pending = false;
  std::string leftover;                 // TakeBufferedInput() when upgrade_pending
  bool feed_refused = false;            // a Feed() returned false
  size_t max_buffered = 0;              // largest buffered_bytes() seen
};

ReaderOutcome RunReader(const std::vector<std::string_view>& pieces,
                        const http::ReaderLimits& limits = http::ReaderLimits());
// Every observable detail, for comparing chunkings.
std::string Render(const ReaderOutcome& o);
// Runs `input` whole, at every split point and bytewise; returns the
// whole-input outcome and sets *mismatch to "" when all chunkings agree.
ReaderOutcome RunAllChunkings(std::string_view input, const http::ReaderLimits& limits,
                              std::string* mismatch);
// Escapes control and non-ASCII bytes for messages.
std::string Printable(std::string_view s);

}  // namespace tw::testing
