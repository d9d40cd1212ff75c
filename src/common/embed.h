// TW_EMBED_FILE: links a file of the source tree into the binary, read-only,
// with the assembler's .incbin (one static binary: no data files to ship).
//
//   asm(TW_EMBED_FILE("my_blob", "src/layer/data/file.txt"));
//   extern "C" const char my_blob_begin[], my_blob_end[];  // [begin, end)
//
// The path is absolute, built from TW_SOURCE_DIR (the repository root, set by
// the Makefile), so g++ and clang++ find the file wherever they are invoked.
// Each blob gets a begin and an end label (hidden, so they never clash across
// shared objects) in a read-only section, followed by one NUL byte that is not
// part of it; .pushsection/.popsection leave the compiler's current section
// untouched. make's -MMD does not see .incbin inputs: the Makefile must list
// the embedded files as prerequisites of the object that embeds them.
#pragma once

#ifndef TW_SOURCE_DIR
#error "TW_SOURCE_DIR (the repository root) must be defined by the build"
#endif

#define TW_EMBED_FILE(name, path)                 \
  ".pushsection .rodata.tw_embedded,\"a\"\n"      \
  ".balign 16\n"                                  \
  ".globl " name "_begin\n"                       \
  ".hidden " name "_begin\n"                      \
  name "_begin:\n"                                \
  ".incbin \"" TW_SOURCE_DIR "/" path "\"\n"      \
  ".globl " name "_end\n"                         \
  ".hidden " name "_end\n"                        \
  name "_end:\n"                                  \
  ".byte 0\n"                                     \
  ".popsection\n"
