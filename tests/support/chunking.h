// One shared helper for testing incremental parsers (picohttpparser style):
// every parser in TokenWire is fed the same input whole, cut at every split
// point into two pieces, and one byte at a time, and must give the same result.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tw::testing {

struct Chunking {
  std::string label;                     // "whole", "split@17", "bytewise"
  std::vector<std::string_view> pieces;  // views into the caller's input
};

// All chunkings of `input`: whole, every 2-way split (1..n-1), and one byte at a
// time. The views point into `input`, which must outlive the result.
std::vector<Chunking> AllChunkings(std::string_view input);

// Runs `feed` for each chunking; `feed` returns the parser's observable result
// rendered as a string. Returns "" when all chunkings agree with the whole-input
// result, else a message naming the first chunking that differed.
std::string CheckSameForAllChunkings(
    std::string_view input,
    const std::function<std::string(const std::vector<std::string_view>&)>& feed);

// Path of a file under the project's tests/data (works from any cwd).
std::string DataPath(std::string_view relative);
// Whole file as bytes; empty string and a failed ok flag if missing.
std::string ReadFile(const std::string& path, bool* ok = nullptr);

}  // namespace tw::testing
