// What this build of TokenWire is (GET /version, the start-up summary):
// the release version, and the git commit it was built from when the build
// could ask git (the Makefile writes it into <build>/gen/tw_commit.h, and
// rewrites that file only when the commit changes).
//
// Threads: constants. Never allocates.
#pragma once

namespace tw::app {

inline constexpr const char* kVersion = "0.1.0";
// `git describe --always --dirty --abbrev=12` at build time ("c471297d1a2b",
// "c471297d1a2b-dirty"), or "unknown" outside a git checkout.
const char* GitCommit();

}  // namespace tw::app
