// `tokenwire generate`: one completion, streamed to stdout as it is produced.
#pragma once

namespace tw::api {

// argv[first..] are the generate flags and the prompt. Returns the exit code.
int GenerateMain(int argc, char** argv, int first);

}  // namespace tw::api
