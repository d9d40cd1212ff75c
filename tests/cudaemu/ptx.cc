// The inline PTX the kernels use (kernels/ptx.cuh), emulated from the PTX
// ISA: cudaemu::Asm parses the statement's text (once per text) and runs it
// with its operands, %N being ops[N]. Exactly these forms are known:
//
//   mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3};
//       a warp collective (every lane of the warp, as .aligned requires).
//       Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32), with
//       g = lane / 4 and t = lane % 4:
//         A (16 x 8, row): a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//         B (8 x 8, col):  b0 = B[t][g], b1 = B[t+4][g]
//         C, D (16 x 8):   c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1]
//       An A or B register is read as tf32: its low 13 bits are ignored.
//       D = A B + C with the products exact and the sum rounded once to
//       float (the tensor cores' internal rounding is not reproduced).
//   cp.async.cg.shared.global [dst], [src], 16;
//       dst a shared-window offset (b32), src a global address (b64); the 16
//       bytes are copied only when a cp.async.wait_group covers their group
//       (never, if the thread exits first), so a read before the wait sees
//       garbage.
//   cp.async.commit_group;     the copies since the last commit become a group.
//   cp.async.wait_group N;     completes all but the newest N groups.
//
// Anything else aborts with the statement's text.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emu.h"

namespace cudaemu {
namespace {

enum class Form { kMmaTf32, kCpAsync16, kCommitGroup, kWaitGroup };

struct Parsed {
  Form form;
  std::vector<std::vector<int>> groups;  // each operand: its %N list ({..} lists, [..] and % give one)
  long imm = 0;                          // wait_group's N, cp.async's size
};

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

[[noreturn]] void Unsupported(const char* text, const char* why) {
  Fatal("unsupported inline PTX (%s): \"%s\"", why, text);
}

// "%3" -> 3; "{%0, %1}" -> {0, 1}; "[%2]" -> {2}; a number -> {} with *imm.
std::vector<int> ParseOperand(const char* text, const std::string& op, long* imm, bool* is_imm) {
  std::string s = Trim(op);
  std::vector<int> regs;
  *is_imm = false;
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
    char* end = nullptr;
    *imm = std::strtol(s.c_str(), &end, 10);
    if (*end != 0) Unsupported(text, "an operand is not a number");
    *is_imm = true;
    return regs;
  }
  if (s.size() >= 2 && ((s.front() == '{' && s.back() == '}') || (s.front() == '[' && s.back() == ']'))) {
    s = s.substr(1, s.size() - 2);
  }
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ',')) ++i;
    if (i >= s.size()) break;
    if (s[i] != '%') Unsupported(text, "an operand is not %N");
    ++i;
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i) Unsupported(text, "an operand is not %N");
    regs.push_back(std::atoi(s.substr(i, j - i).c_str()));
    i = j;
  }
  return regs;
}

Parsed Parse(const char* text) {
  std::string s = Trim(text);
  if (s.empty() || s.back() != ';') Unsupported(text, "one statement ending in ';' expected");
  s.pop_back();
  if (s.find(';') != std::string::npos) Unsupported(text, "more than one statement");
  size_t sp = 0;
  while (sp < s.size() && !std::isspace(static_cast<unsigned char>(s[sp]))) ++sp;
  const std::string opcode = s.substr(0, sp);
  const std::string rest = sp < s.size() ? s.substr(sp) : "";
  // Operands, split at commas outside braces.
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : rest) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!Trim(cur).empty()) parts.push_back(cur);
  Parsed p{};
  long imm = 0;
  bool is_imm = false;
  std::vector<bool> imms;
  for (const std::string& part : parts) {
    p.groups.push_back(ParseOperand(text, part, &imm, &is_imm));
    imms.push_back(is_imm);
    if (is_imm) p.imm = imm;
  }
  auto shape = [&](std::initializer_list<int> sizes) {
    if (p.groups.size() != sizes.size()) return false;
    size_t i = 0;
    for (int n : sizes) {
      if (n < 0 ? !imms[i] : (imms[i] || static_cast<int>(p.groups[i].size()) != n)) return false;
      ++i;
    }
    return true;
  };
  if (opcode == "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") {
    if (!shape({4, 4, 2, 4})) Unsupported(text, "mma.m16n8k8 takes {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3}");
    p.form = Form::kMmaTf32;
  } else if (opcode == "cp.async.cg.shared.global") {
    if (!shape({1, 1, -1}) || p.imm != 16) Unsupported(text, "cp.async.cg takes [dst], [src], 16");
    p.form = Form::kCpAsync16;
  } else if (opcode == "cp.async.commit_group") {
    if (!p.groups.empty()) Unsupported(text, "commit_group takes no operand");
    p.form = Form::kCommitGroup;
  } else if (opcode == "cp.async.wait_group") {
    if (!shape({-1}) || p.imm < 0) Unsupported(text, "wait_group takes one non-negative number");
    p.form = Form::kWaitGroup;
  } else {
    Unsupported(text, "not one of the forms the emulator knows");
  }
  return p;
}

struct CacheEntry {
  const char* ptr;
  std::string text;
  Parsed parsed;
};

const Parsed& Cached(const char* text) {
  // One entry per distinct statement (a handful), found by the literal's
  // address first; device work runs on one host thread at a time.
  static std::vector<CacheEntry> cache;
  for (const CacheEntry& e : cache) {
    if (e.ptr == text) return e.parsed;
  }
  for (const CacheEntry& e : cache) {
    if (e.text == text) return e.parsed;
  }
  cache.push_back(CacheEntry{text, text, Parse(text)});
  return cache.back().parsed;
}

using Ops = std::initializer_list<AsmOperand>;

const AsmOperand& Operand(const char* text, Ops ops, int n, char type, bool output) {
  if (n < 0 || static_cast<size_t>(n) >= ops.size()) Fatal("inline PTX \"%s\": %%%d has no operand", text, n);
  const AsmOperand& o = ops.begin()[n];
  if (o.type != type || (output && !o.output)) {
    Fatal("inline PTX \"%s\": %%%d is a%s '%c' operand, the instruction needs a%s '%c'", text, n,
          o.output ? "n output" : "n input", o.type, output ? "n output" : "", type);
  }
  return o;
}

float Tf32(uint32_t bits) {
  bits &= 0xFFFFE000u;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void DoCopy(const AsyncCopy& c) { std::memcpy(c.dst, c.src, 16); }

}  // namespace

void MmaM16N8K8Tf32(PtxThreadState* const lanes[32]) {
  float A[16][8], B[8][8], Cm[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    const PtxThreadState& s = *lanes[l];
    A[g][t] = Tf32(s.mma_a[0]);
    A[g + 8][t] = Tf32(s.mma_a[1]);
    A[g][t + 4] = Tf32(s.mma_a[2]);
    A[g + 8][t + 4] = Tf32(s.mma_a[3]);
    B[t][g] = Tf32(s.mma_b[0]);
    B[t + 4][g] = Tf32(s.mma_b[1]);
    Cm[g][2 * t] = s.mma_c[0];
    Cm[g][2 * t + 1] = s.mma_c[1];
    Cm[g + 8][2 * t] = s.mma_c[2];
    Cm[g + 8][2 * t + 1] = s.mma_c[3];
  }
  float D[16][8];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      double acc = Cm[i][j];
      for (int k = 0; k < 8; ++k) acc += static_cast<double>(A[i][k]) * B[k][j];
      D[i][j] = static_cast<float>(acc);
    }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    PtxThreadState& s = *lanes[l];
    s.mma_d[0] = D[g][2 * t];
    s.mma_d[1] = D[g][2 * t + 1];
    s.mma_d[2] = D[g + 8][2 * t];
    s.mma_d[3] = D[g + 8][2 * t + 1];
  }
}

void DropAsyncCopies(PtxThreadState& s) {
  s.groups.clear();
  s.uncommitted.clear();
}

void Asm(const char* text, std::initializer_list<AsmOperand> ops) {
  const Parsed& p = Cached(text);
  PtxThreadState& s = CurrentPtxState();
  switch (p.form) {
    case Form::kMmaTf32: {
      for (int i = 0; i < 4; ++i) {
        s.mma_a[i] = static_cast<uint32_t>(Operand(text, ops, p.groups[1][static_cast<size_t>(i)], 'r', false).bits);
        const uint64_t c = Operand(text, ops, p.groups[3][static_cast<size_t>(i)], 'f', false).bits;
        std::memcpy(&s.mma_c[i], &c, 4);
        (void)Operand(text, ops, p.groups[0][static_cast<size_t>(i)], 'f', true);
      }
      for (int i = 0; i < 2; ++i) {
        s.mma_b[i] = static_cast<uint32_t>(Operand(text, ops, p.groups[2][static_cast<size_t>(i)], 'r', false).bits);
      }
      WarpMma(text);
      for (int i = 0; i < 4; ++i) {
        const AsmOperand& d = ops.begin()[p.groups[0][static_cast<size_t>(i)]];
        *static_cast<float*>(d.ptr) = s.mma_d[i];
      }
      break;
    }
    case Form::kCpAsync16: {
      const uint32_t dst = static_cast<uint32_t>(Operand(text, ops, p.groups[0][0], 'r', false).bits);
      const uint64_t src = Operand(text, ops, p.groups[1][0], 'l', false).bits;
      if (dst % 16 != 0 || src % 16 != 0) {
        Fatal("cp.async of 16 bytes needs 16-byte aligned addresses: shared 0x%x, global 0x%llx", dst,
              static_cast<unsigned long long>(src));
      }
      s.uncommitted.push_back(AsyncCopy{SharedPointer(dst, 16), reinterpret_cast<const void*>(src)});
      break;
    }
    case Form::kCommitGroup:
      s.groups.push_back(std::move(s.uncommitted));
      s.uncommitted.clear();
      break;
    case Form::kWaitGroup:
      while (s.groups.size() > static_cast<size_t>(p.imm)) {
        for (const AsyncCopy& c : s.groups.front()) DoCopy(c);
        s.groups.pop_front();
      }
      break;
  }
}

}  // namespace cudaemu
