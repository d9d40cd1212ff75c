# CUDA kernels (kernels/*.cu), their development versions (kernels/dev/*.cu)
# and the GPU test suites (tests/gpu/). Included by the top-level Makefile;
# used by `make CUDA=1` builds (BUILD is then build/cuda).
#
#   $(BUILD)/lib/kernels.a        the kernels layer (top-level Makefile): kernels/*.cc
#                                 (host layouts and plans, every build) and, in CUDA
#                                 builds, kernels/*.cu (the launchers in kernels/*.h)
#   $(BUILD)/dev/<name>           one standalone program per kernels/dev/<name>.cu
#                                 (CPU reference, numbered versions, timing)
#   $(BUILD)/tests/gpu_tests      tests/gpu/*_test.cc (GoogleTest), run by make test-gpu
#
# Targets: sm_90a (H100/H200) and sm_80 machine code plus compute_80 PTX for
# anything newer. ptxas warns on spills and local-memory use, and warnings
# are errors: a kernel that spills does not build.

NVCC      ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) $(shell command -v nvcc 2>/dev/null) nvcc)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_80,code=compute_80
NVCCFLAGS := -std=c++20 -O3 $(CUDA_ARCH) -I. -Isrc -MMD -MP \
             -Xptxas -warn-spills,-warn-lmem-usage,-Werror \
             -Xcompiler -Wall,-Wextra,-Werror,-Wno-missing-field-initializers
# The runtime is linked statically; it loads the driver (libcuda.so) with
# dlopen, so the C library stays dynamic (see README, "GPU build").
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -static-libstdc++ -static-libgcc

KERNEL_LIB  := $(BUILD)/lib/kernels.a
KERNEL_DEV_SRCS := $(wildcard kernels/dev/*.cu)
KERNEL_DEV_BINS := $(KERNEL_DEV_SRCS:kernels/dev/%.cu=$(BUILD)/dev/%)
GPU_TEST_SRCS := $(wildcard tests/gpu/*.cc)
GPU_TEST_OBJS := $(GPU_TEST_SRCS:%.cc=$(BUILD)/obj/%.o)
GPU_TEST_BIN  := $(BUILD)/tests/gpu_tests

ifeq ($(CUDA),emu)
# ---- the CPU emulator's build (make CUDA=emu; make test-gpu-emu) ------------
# The same .cu files, compiled as C++ against tests/cudaemu/cuda_runtime.h and
# linked with the emulator's runtime. Clang takes nvcc's place: the emulated
# __shared__ puts function-local statics in one linker section, which GCC
# ignores for statics in templates (and every kernel is a template).
# -ffp-contract=off: a*b+c stays two roundings, as nvcc's __fmul_rn/__fadd_rn;
# -mfma (where the CPU has it) makes fmaf one instruction instead of a call.
EMU_FMA      := $(shell grep -qw fma /proc/cpuinfo 2>/dev/null && echo -mfma)
EMU_CXXFLAGS := -x c++ -std=c++20 $(OPT) -ffp-contract=off $(EMU_FMA) $(WARN) -I. -Isrc -Itests/cudaemu -MMD -MP \
                -DTW_CUDA=1 -DTW_CUDA_EMULATOR=1 -DTW_SOURCE_DIR=\"$(CURDIR)\" -pthread
EMU_LIB_OBJS := $(patsubst %.cc,$(BUILD)/obj/%.o,$(filter-out %_test.cc,$(wildcard tests/cudaemu/*.cc)))
EMU_TEST_BIN := $(BUILD)/tests/cudaemu_tests

$(BUILD)/obj/kernels/%.o: kernels/%.cu
	@mkdir -p $(dir $@)
	$(call quiet,EMU,$<)$(CLANGXX) $(EMU_CXXFLAGS) -c $< -o $@

$(BUILD)/obj/tests/cudaemu/%.o: tests/cudaemu/%.cu
	@mkdir -p $(dir $@)
	$(call quiet,EMU,$<)$(CLANGXX) $(EMU_CXXFLAGS) -c $< -o $@

$(EMU_LIB): $(EMU_LIB_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(call quiet,AR,$@)ar rcs $@ $^

$(BUILD)/dev/%: kernels/dev/%.cu $(KERNEL_LIB) $(call layer_lib,common) $(EMU_LIB)
	@mkdir -p $(dir $@)
	$(call quiet,EMU,$<)$(CLANGXX) $(EMU_CXXFLAGS) -o $@ $< -x none $(KERNEL_LIB) $(call layer_lib,common) $(EMU_LIB)

# The emulator and its own suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer (its fibers tell ASan of every stack switch).
EMU_ASAN_FLAGS := -O1 $(DEBUGINFO) -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
EMU_ASAN_SRCS  := $(filter-out %_test.cc,$(wildcard tests/cudaemu/*.cc)) $(wildcard src/common/*.cc)
EMU_ASAN_BIN   := $(BUILD)/tests/cudaemu_tests_asan

$(BUILD)/asan-obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(call quiet,CXX,$<)$(CXX) $(CXXFLAGS) $(TEST_INCLUDES) $(EMU_ASAN_FLAGS) -c $< -o $@

$(BUILD)/asan-obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(call quiet,EMU,$<)$(CLANGXX) $(EMU_CXXFLAGS) $(EMU_ASAN_FLAGS) -c $< -o $@

$(EMU_ASAN_BIN): $(patsubst %,$(BUILD)/asan-obj/%.o,$(basename $(EMU_ASAN_SRCS) $(wildcard tests/cudaemu/*_test.cu))) | gtest-check
	@mkdir -p $(dir $@)
	$(call quiet,LD,$@)$(CXX) -o $@ $^ $(GTEST_LINK) -fsanitize=address,undefined -pthread

$(EMU_TEST_BIN): $(patsubst %.cu,$(BUILD)/obj/%.o,$(wildcard tests/cudaemu/*_test.cu)) $(KERNEL_LIB) \
                 $(call layer_lib,common) $(EMU_LIB) | gtest-check
	@mkdir -p $(dir $@)
	$(call quiet,LD,$@)$(CXX) -o $@ $(filter %.o,$^) $(KERNEL_LIB) $(call layer_lib,common) $(EMU_LIB) $(GTEST_LINK) $(LDFLAGS)
else
$(BUILD)/obj/kernels/%.o: kernels/%.cu
	@mkdir -p $(dir $@)
	$(call quiet,NVCC,$<)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/dev/%: kernels/dev/%.cu $(KERNEL_LIB) $(BUILD)/lib/common.a
	@mkdir -p $(dir $@)
	$(call quiet,NVCC,$<)$(NVCC) $(NVCCFLAGS) -o $@ $< $(KERNEL_LIB) $(BUILD)/lib/common.a -cudart static
endif

.PHONY: kernels-dev
kernels-dev: $(KERNEL_DEV_BINS)
