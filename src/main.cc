// tokenwire: the command-line entry point (DESIGN.md §3).
//
//   tokenwire serve [flags]               the streaming server
//   tokenwire generate [flags] "prompt"   one completion streamed to stdout
//
// Here and in app::GenerateMain (for generate) a failed Status becomes an
// exit code; nowhere else.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "app/app.h"
#include "app/config.h"
#include "app/generate_cli.h"

namespace {

void Usage(FILE* f) { std::fputs(tw::app::ProgramUsage().c_str(), f); }

int Serve(int argc, char** argv) {
  for (int i = 2; i < argc; i++) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(tw::app::ServeHelp().c_str(), stdout);
      return 0;
    }
  }
  tw::app::Config cfg;
  tw::Status s = tw::app::ParseServeFlags(argc, argv, 2, &cfg);
  if (!s.ok()) {
    std::fprintf(stderr, "tokenwire serve: %s\n", s.message().c_str());
    return 2;
  }
  tw::app::App app(cfg);
  s = app.Init(/*watch_signals=*/true);
  if (!s.ok()) {
    std::fprintf(stderr, "tokenwire serve: %s\n", s.message().c_str());
    return 1;
  }
  s = app.Run();
  if (!s.ok()) {
    std::fprintf(stderr, "tokenwire serve: %s\n", s.message().c_str());
    return 1;
  }
  // The log's last line says so ("stopped"), in the log's format.
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "serve") return Serve(argc, argv);
  if (cmd == "generate") return tw::app::GenerateMain(argc, argv, 2);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "tokenwire: unknown command '%s'\n", argv[1]);
  Usage(stderr);
  return 2;
}
