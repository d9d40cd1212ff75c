// The scalar (portable) kernel level: kernels_simd.inc with one-lane ops.
#include "cpu/kernel_table.h"

namespace tw::cpu::internal {

#include "cpu/scalar_ops.inc"

namespace {
using V = S;
}  // namespace

#include "cpu/kernels_simd.inc"

const KernelTable& ScalarTable() { return kTable; }

}  // namespace tw::cpu::internal
