#include "cpu/aligned.h"

#include <new>

namespace tw::cpu {

void AlignedFree::operator()(float* p) const {
  ::operator delete[](p, std::align_val_t(kBufferAlignment));
}

AlignedFloats AllocAligned(size_t floats) {
  if (floats == 0) floats = 1;
  void* p = ::operator new[](floats * sizeof(float), std::align_val_t(kBufferAlignment), std::nothrow);
  return AlignedFloats(static_cast<float*>(p));
}

}  // namespace tw::cpu
