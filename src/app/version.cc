#include "app/version.h"

// Written by the Makefile (its -I puts <build>/gen on the path for this file
// only); a build without it (fuzz, clang's thread-safety pass) says "unknown".
#if __has_include("tw_commit.h")
#include "tw_commit.h"
#endif
#ifndef TW_GIT_COMMIT
#define TW_GIT_COMMIT "unknown"
#endif

namespace tw::app {

const char* GitCommit() { return TW_GIT_COMMIT; }

}  // namespace tw::app
