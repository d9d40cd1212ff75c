# TokenWire build. Plain GNU make; -j2 friendly; incremental (header deps via -MMD).
#
#   make              build/tokenwire (static) and build/weights_tool
#   make test         every GoogleTest suite that needs no GPU
#   make test-quick   the same without the socket-and-timer-heavy cases (QUICK_SKIP)
#   make test SAN=1   the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test SAN=thread   the same under ThreadSanitizer
#   make fuzz         libFuzzer targets (clang), each for FUZZ_SECONDS (default 60)
#   make thread-safety  clang's -Wthread-safety over src/ (common/mutex.h annotations)
#   make run          build everything, serve GPT-2 on 127.0.0.1:8080 (ARGS="..." adds flags)
#   make demo         the same with the mock backend at a readable pace (DEMO_FLAGS)
#   make model        train the default model; check it is the committed one bit for bit
#   make bench        benchmarks into bench/runs/<date>/ with verdicts; RESULTS.md from bench/results/
#   make train-golden the trainer's PyTorch golden file (tests/train/torch_train_step.py)
#   make CUDA=1       the GPU build in build/cuda (nvcc; kernels/kernels.mk)
#   make test-gpu     the GPU suites (tests/gpu; CUDA=1 implied); skip without a GPU
#   V=1               print whole compiler commands instead of short lines
#
# Builds run one job per core (nproc) unless the command line says -jN.
#
# Layout: each folder under src/ is one layer and becomes one archive
# build/lib/<layer>.a; tests/<layer>/*_test.cc become build/tests/<layer>_tests.

CXX      ?= g++
# Debug information: line tables and function names (what sanitizer
# reports, profilers and backtraces need), a third less compile time than
# full -g; DEBUGINFO=-g for variables in a debugger.
DEBUGINFO ?= -g1
CLANGXX  ?= $(firstword $(shell command -v clang++ clang++-14 2>/dev/null) clang++)
SAN      ?=
CUDA     ?=
FUZZ_SECONDS ?= 60
ARGS     ?=
V        ?=

# Parallel by default, so that `make run` on a fresh clone compiles on every
# core; a -jN on the command line wins over this (checked with GNU make 4.3).
ifeq ($(filter -j%,$(MAKEFLAGS)),)
  MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
# ... except that `make clean all` must clean before it builds.
ifneq ($(filter clean,$(MAKECMDGOALS)),)
.NOTPARALLEL:
endif

# Short build lines ("  CXX   src/http/server.cc") unless V=1.
ifeq ($(V),1)
  quiet =
else
  quiet = @printf '  %-5s %s\n' '$(1)' '$(2)';
endif

ifeq ($(SAN),1)
  BUILD    := build/asan
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  OPT      := -O1 $(DEBUGINFO)
else ifeq ($(SAN),thread)
  BUILD    := build/tsan
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
  OPT      := -O1 $(DEBUGINFO)
else ifeq ($(CUDA),1)
  BUILD    := build/cuda
  SANFLAGS :=
  OPT      := -O2 $(DEBUGINFO)
else ifeq ($(CUDA),emu)
  BUILD    := build/emu
  SANFLAGS :=
  OPT      := -O2 $(DEBUGINFO)
else
  BUILD    := build
  SANFLAGS :=
  OPT      := -O2 $(DEBUGINFO)
endif

WARN     := -Wall -Wextra -Werror -Wno-missing-field-initializers
CXXFLAGS := -std=c++20 $(OPT) $(WARN) $(SANFLAGS) -pthread -I. -Isrc -MMD -MP \
            -DTW_SOURCE_DIR=\"$(CURDIR)\"
# Tests, benches and tools may include tests/ and bench/ headers; src/ may not
# (its own rule below compiles it without these).
TEST_INCLUDES := -Itests -Ibench
LDFLAGS  := $(SANFLAGS) -pthread
# The shipped CPU binaries are static; sanitizer builds cannot be, and the
# CUDA build links the C library dynamically (kernels/kernels.mk).
ifeq ($(CUDA),1)
  CXXFLAGS += -DTW_CUDA=1
else ifeq ($(CUDA),emu)
  CXXFLAGS += -DTW_CUDA=1 -DTW_CUDA_EMULATOR=1 -Itests/cudaemu
else ifeq ($(SANFLAGS),)
  STATIC := -static
endif

# A layer's sources: src/<layer>/*.cc, where *_cuda.cc is compiled only in
# CUDA builds and *_nocuda.cc only in the others.
ifneq ($(filter 1 emu,$(CUDA)),)
  NOT_THIS_BUILD := %_nocuda.cc
else
  NOT_THIS_BUILD := %_cuda.cc
endif
# The kernels layer is kernels/: its host C++ (*.cc: layouts, plans) in
# every build, its CUDA (*.cu) in CUDA builds only.
layer_dir = $(if $(filter kernels,$(1)),kernels,src/$(1))
layer_srcs = $(filter-out $(NOT_THIS_BUILD),$(wildcard $(call layer_dir,$(1))/*.cc)) \
             $(if $(and $(filter kernels,$(1)),$(filter 1 emu,$(CUDA))),$(wildcard kernels/*.cu))
layer_objs = $(patsubst %.cu,$(BUILD)/obj/%.o,$(patsubst %.cc,$(BUILD)/obj/%.o,$(call layer_srcs,$(1))))
# The layers, each before every layer it includes (docs/ARCHITECTURE.md's
# table; tests/docs/layering_test.cc checks both). The archives are linked in
# this order with no link group, so an include cycle fails the link.
LAYER_ORDER := app openai service client web ws sse wire cuda kernels train model engine backend grammar http stream tokenizer cpu net json common
LAYERS   := $(LAYER_ORDER)
# The CPU emulator's build (CUDA=emu; make test-gpu-emu) compiles only what
# differs from the plain build -- kernels/ (the .cu files, as C++ against
# tests/cudaemu), src/cuda/ (the CUDA runner), tests/gpu/ and tests/cudaemu/
# -- and links the plain build's archives and objects for everything else:
# no source outside those folders tests TW_CUDA_EMULATOR, so they compile to
# the same code. PLAIN_BUILD is where those shared parts live.
ifeq ($(CUDA),emu)
  PLAIN_BUILD := build
  OWN_LAYERS  := cuda kernels
else
  PLAIN_BUILD := $(BUILD)
  OWN_LAYERS  := $(LAYERS)
endif
layer_lib = $(if $(filter $(OWN_LAYERS),$(1)),$(BUILD),$(PLAIN_BUILD))/lib/$(1).a
LAYER_LIBS := $(foreach l,$(LAYERS),$(if $(call layer_srcs,$(l)),$(call layer_lib,$(l))))
# The emulator build links the CUDA-on-CPU runtime (tests/cudaemu) last: the
# kernels layer calls it.
EMU_LIB  := $(if $(filter emu,$(CUDA)),$(BUILD)/lib/cudaemu.a)
LIBS_GROUP := $(LAYER_LIBS) $(EMU_LIB)

TEST_DIRS := $(sort $(filter-out support data fuzz gpu interop cudaemu,$(notdir $(wildcard tests/*))))
TEST_BINS := $(foreach d,$(TEST_DIRS),$(if $(wildcard tests/$(d)/*_test.cc),$(BUILD)/tests/$(d)_tests))
SUPPORT_SRCS := $(wildcard tests/support/*.cc)
SUPPORT_OBJS := $(SUPPORT_SRCS:%.cc=$(PLAIN_BUILD)/obj/%.o)

# GoogleTest: Debian's libgtest-dev, or GTEST_DIR=<dir with include/ and lib/>
# (bench/gpu/run.sh builds one from source on a machine without it).
GTEST_DIR ?=
ifneq ($(GTEST_DIR),)
  GTEST_LIB  := $(wildcard $(GTEST_DIR)/lib/libgtest.a)
  GTEST_INC  := $(GTEST_DIR)/include
  GTEST_LINK := $(GTEST_DIR)/lib/libgtest_main.a $(GTEST_DIR)/lib/libgtest.a
  CXXFLAGS   += -isystem $(GTEST_DIR)/include
else
  GTEST_LIB  := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib/libgtest.a /usr/local/lib/libgtest.a))
  GTEST_INC  := /usr/include/gtest
  GTEST_LINK := -lgtest -lgtest_main
endif

# The bench's shared code (the SVG chart writer, the result-file convention,
# the load generators' event loop) as $(BENCH_LIB); tests/bench checks the
# charts.
include bench/lib/bench.mk
PLAIN_BENCH_LIB := $(patsubst $(BUILD)/%,$(PLAIN_BUILD)/%,$(BENCH_LIB))
# The CUDA kernels, their dev programs and the GPU tests (CUDA=1 builds).
include kernels/kernels.mk
ifeq ($(CUDA),1)
  LDFLAGS += $(CUDA_LDLIBS)
endif

.PHONY: all test fuzz fuzz-check run bench clean gtest-check
.DEFAULT_GOAL := all

all: $(BUILD)/tokenwire $(BUILD)/weights_tool

# ---- objects and layer archives -------------------------------------------
$(BUILD)/obj/src/%.o: src/%.cc
	@mkdir -p $(dir $@)
	$(call quiet,CXX,$<)$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(call quiet,CXX,$<)$(CXX) $(CXXFLAGS) $(TEST_INCLUDES) -c $< -o $@

define LAYER_RULE
$(BUILD)/lib/$(1).a: $(call layer_objs,$(1))
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	$$(call quiet,AR,$$@)ar rcs $$@ $$^
endef
$(foreach l,$(OWN_LAYERS),$(eval $(call LAYER_RULE,$(l))))

# The commit GET /version names (src/app/version.h): <build>/gen/tw_commit.h,
# rewritten only when `git describe` says something new, so an unchanged
# tree recompiles nothing and a new commit recompiles one file.
GIT_COMMIT := $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
$(shell mkdir -p $(PLAIN_BUILD)/gen && printf '\043define TW_GIT_COMMIT "%s"\n' '$(GIT_COMMIT)' > $(PLAIN_BUILD)/gen/tw_commit.h.new && \
  (cmp -s $(PLAIN_BUILD)/gen/tw_commit.h.new $(PLAIN_BUILD)/gen/tw_commit.h || mv $(PLAIN_BUILD)/gen/tw_commit.h.new $(PLAIN_BUILD)/gen/tw_commit.h); \
  rm -f $(PLAIN_BUILD)/gen/tw_commit.h.new)
$(PLAIN_BUILD)/obj/src/app/version.o: CXXFLAGS += -I$(PLAIN_BUILD)/gen

# ---- binaries ----------------------------------------------------------------

$(BUILD)/tokenwire: $(PLAIN_BUILD)/obj/src/main.o $(LAYER_LIBS) $(EMU_LIB)
	$(call quiet,LD,$@)$(CXX) $(STATIC) -o $@ $< $(LIBS_GROUP) $(LDFLAGS)

$(BUILD)/weights_tool: $(patsubst %.cc,$(PLAIN_BUILD)/obj/%.o,$(wildcard weights_tool/*.cc)) $(LAYER_LIBS) $(EMU_LIB)
	$(call quiet,LD,$@)$(CXX) $(STATIC) -o $@ $(filter %.o,$^) $(LIBS_GROUP) $(LDFLAGS)

# ---- tests -------------------------------------------------------------------
gtest-check:
	@if [ -z "$(GTEST_LIB)" ] || [ ! -d $(GTEST_INC) ]; then \
	  echo "GoogleTest is missing: apt-get install -y libgtest-dev"; exit 1; fi

define TEST_RULE
$(BUILD)/tests/$(1)_tests: $(patsubst %.cc,$(PLAIN_BUILD)/obj/%.o,$(wildcard tests/$(1)/*.cc)) $(SUPPORT_OBJS) $(LAYER_LIBS) $(EMU_LIB) $(PLAIN_BENCH_LIB) | gtest-check
	@mkdir -p $$(dir $$@)
	$$(call quiet,LD,$$@)$(CXX) -o $$@ $$(filter %.o,$$^) $(PLAIN_BENCH_LIB) $(LIBS_GROUP) $(GTEST_LINK) $(LDFLAGS)
endef
$(foreach d,$(TEST_DIRS),$(eval $(call TEST_RULE,$(d))))

# The suites run one after another, each split into TEST_JOBS shards side
# by side (tests/run_suites.sh; the loopback tests use ports of their own,
# port 0); each build step above is parallel. Each suite's output is also
# kept in $(BUILD)/test-logs/, and the failures are printed again at the
# end, so the tail of a long log names what failed.
TEST_JOBS ?= 2
test: $(TEST_BINS) $(BUILD)/tokenwire $(BUILD)/weights_tool
	@bash tests/run_suites.sh $(BUILD)/test-logs $(TEST_JOBS) $(TEST_BINS)

# make test-quick: the same suites without the cases that wait on sockets
# and timers (signals to the real binary and its drain, the slow-reader
# policies, linger, heartbeats, header timeouts, unread floods, 300 streams
# over HTTP) and the 124M-parameter formats test: every parser, kernel,
# engine and protocol test still runs. README says how long each takes.
QUICK_SKIP := Signals.*:Streams.DropSlow*:Streams.PauseThenCancel*:Streams.PauseProducer*:Streams.Linger*:\
Streams.Heartbeats*:WsSession.PauseThenCancel*:WsSession.DropSlow*:WsSession.PauseProducer*:WsSession.*Flood*:\
WsSession.Heartbeat*:ServerTest.*408*:EngineLeak.ThreeHundredStreamsThroughHttp:\
Completions.StreamHeadersAndHeartbeats:Gpt2SmallFormatsTest.*:*ClosingSlowReader.*:PrepQueue.*
.PHONY: test-quick
test-quick:
	@GTEST_FILTER='-$(QUICK_SKIP)' $(MAKE) --no-print-directory test

# make train-golden: regenerate tests/data/train/step_golden.safetensors,
# PyTorch autograd's loss, gradients and AdamW step for the trainer's golden
# test (tests/train/torch_train_step.py; Debian's python3-torch). make test
# only reads the committed file.
.PHONY: train-golden
train-golden:
	/usr/bin/python3 tests/train/torch_train_step.py

# ---- GPU build and tests (kernels/kernels.mk) -------------------------------
# make test-gpu: the GPU suites, each kernel against its CPU reference and the
# engine on the CUDA runner. Without a GPU they skip, saying why.
.PHONY: test-gpu
ifneq ($(filter 1 emu,$(CUDA)),)
$(GPU_TEST_BIN): $(GPU_TEST_OBJS) $(SUPPORT_OBJS) $(LAYER_LIBS) $(EMU_LIB) | gtest-check
	@mkdir -p $(dir $@)
	$(call quiet,LD,$@)$(CXX) -o $@ $(GPU_TEST_OBJS) $(SUPPORT_OBJS) $(LIBS_GROUP) $(GTEST_LINK) $(LDFLAGS)

test-gpu: $(GPU_TEST_BIN) $(BUILD)/tokenwire $(BUILD)/tests/engine_tests
	$(GPU_TEST_BIN) --gtest_brief=1
	@if $(GPU_TEST_BIN) --gtest_list_tests >/dev/null && nvidia-smi -L >/dev/null 2>&1; then \
	  echo "== the engine suites on the CUDA runner (TW_TEST_RUNNER=cuda)"; \
	  TW_TEST_RUNNER=cuda $(BUILD)/tests/engine_tests --gtest_brief=1; \
	else echo "== the engine suites on the CUDA runner: skipped (no GPU: nvidia-smi -L failed)"; fi
else
test-gpu:
	$(MAKE) CUDA=1 test-gpu
endif

# ---- the CUDA code on the CPU emulator (tests/cudaemu) ----------------------
# make test-gpu-emu: the plain build's layers and objects, then the emulator
# build (build/emu), then tests/cudaemu/run.sh: the emulator's own suite,
# tests/gpu at CI shapes, the kernels/dev checkers, the engine suites on the
# CUDA runner and the server over HTTP, all on the CPU (no GPU involved).
.PHONY: test-gpu-emu
ifeq ($(CUDA),emu)
test-gpu-emu: $(EMU_TEST_BIN) $(EMU_ASAN_BIN) $(GPU_TEST_BIN) $(BUILD)/tests/engine_tests $(BUILD)/tokenwire \
              $(KERNEL_DEV_BINS)
	bash tests/cudaemu/run.sh $(BUILD)

# The plain build's parts are made by a plain make (make test-gpu-emu runs one first).
$(PLAIN_BUILD)/%:
	@echo "$@ is missing or older than its sources: the emulator build links the plain build's layers;"; \
	 echo "run make test-gpu-emu, or make with no CUDA= first"; exit 1
else
test-gpu-emu: $(LAYER_LIBS) $(SUPPORT_OBJS) $(BENCH_LIB) $(BUILD)/obj/src/main.o \
              $(patsubst %.cc,$(BUILD)/obj/%.o,$(wildcard tests/engine/*.cc))
	@if [ "$(BUILD)" != build ]; then echo "make test-gpu-emu takes no SAN= or CUDA= (it builds on the plain build)"; exit 1; fi
	$(MAKE) CUDA=emu test-gpu-emu
endif

# The GoogleTest source bench/gpu/run.sh builds on a GPU machine that has
# none (.gtest-src/ is ignored by git; the device tool carries it).
.PHONY: gpu-carry
gpu-carry:
	rm -rf .gtest-src && mkdir -p .gtest-src && cp -r /usr/src/googletest/googletest .gtest-src/

# ---- fuzzing (clang + libFuzzer) -------------------------------------------
# The layers are compiled once with coverage instrumentation into one archive;
# each tests/fuzz/<name>_fuzz.cc links against it.
FUZZ_SRCS := $(wildcard tests/fuzz/*_fuzz.cc)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.cc=build/fuzz/%)
FUZZ_LIB_SRCS := $(filter-out %_cuda.cc,$(wildcard src/*/*.cc))
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.cc=build/fuzz/obj/%.o)
FUZZ_CXXFLAGS := -std=c++20 -O1 $(DEBUGINFO) -I. -Isrc -Itests -pthread -MMD -MP -DTW_SOURCE_DIR=\"$(CURDIR)\" \
                 -fsanitize=address,undefined -fno-omit-frame-pointer

build/fuzz/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CLANGXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build/fuzz/libtw_fuzz.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

build/fuzz/%: tests/fuzz/%.cc build/fuzz/libtw_fuzz.a
	@mkdir -p build/fuzz
	$(CLANGXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer -o $@ $< build/fuzz/libtw_fuzz.a

fuzz-check:
	@command -v $(CLANGXX) >/dev/null 2>&1 || { echo "clang is missing: apt-get install -y clang libclang-rt-14-dev"; exit 1; }

# Two targets at a time by default (FUZZ_JOBS; each is one process on one
# core): tests/fuzz/run.sh.
FUZZ_JOBS ?= 2
fuzz: fuzz-check $(FUZZ_BINS)
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_BINS)

# ---- thread-safety analysis (clang) -----------------------------------------
# Every source of src/ through clang's -Wthread-safety, as errors: a member
# marked TW_GUARDED_BY(mu_) touched without mu_ held, or a TW_REQUIRES
# function called without it, fails the build (common/mutex.h). Syntax only:
# nothing is generated but one stamp per file.
TSA_SRCS := $(filter-out %_cuda.cc,$(wildcard src/*/*.cc)) src/main.cc
TSA_STAMPS := $(TSA_SRCS:%.cc=build/tsa/%.ok)
TSA_FLAGS := -std=c++20 -I. -Isrc -pthread -MMD -MP -fsyntax-only -DTW_SOURCE_DIR=\"$(CURDIR)\" \
             -Wthread-safety -Wthread-safety-beta -Werror=thread-safety -Werror=thread-safety-beta

build/tsa/%.ok: %.cc
	@mkdir -p $(dir $@)
	$(call quiet,TSA,$<)$(CLANGXX) $(TSA_FLAGS) -MF $(@:.ok=.d) -MT $@ $<
	@touch $@

.PHONY: thread-safety
thread-safety: fuzz-check $(TSA_STAMPS)
	@echo "thread-safety: $(words $(TSA_STAMPS)) files clean under clang -Wthread-safety"

# ---- running and benchmarks -------------------------------------------------
# make run builds weights_tool too (the README's weights section uses it).
run: $(BUILD)/tokenwire $(BUILD)/weights_tool
	$(BUILD)/tokenwire serve --host 127.0.0.1 --port 8080 $(ARGS)

# make demo: synthetic tokens slow enough to watch, for the README's
# walk-through by hand: 5 tokens a second after a 300 ms first token (64
# tokens, the page's default, take ~13 s), and a stream nobody reads is kept
# for a minute, time to copy its id and resume after a Ctrl-C.
DEMO_FLAGS := --backend mock --mock-ttft-ms 300 --mock-tokens-per-s 5 --linger-ms 60000
.PHONY: demo
demo: $(BUILD)/tokenwire $(BUILD)/weights_tool
	$(BUILD)/tokenwire serve --host 127.0.0.1 --port 8080 $(DEMO_FLAGS) $(ARGS)

# make model: trains the default model (weights_tool train on Debian's
# fortunes, pinned flags and seed; about 8 minutes on 2 cores) into
# build/model/ and checks it is the committed src/model/data/gpt2-fortunes
# bit for bit; MODEL_UPDATE=1 replaces the committed one (weights_tool/model.sh).
.PHONY: model
model:
	env -u MAKEFLAGS -u MFLAGS bash weights_tool/model.sh

# The scripts run make themselves, with their own -j: they get no jobserver
# from this make (env -u), which would only make them warn.
bench: all
	env -u MAKEFLAGS -u MFLAGS bash bench/run.sh

clean:
	rm -rf build

# Benchmark programs: each bench/<name>/bench.mk adds its rules.
include $(filter-out bench/lib/bench.mk,$(wildcard bench/*/bench.mk))

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- interop: real clients against build/tokenwire -------------------------
# `make interop` runs tests/interop/run.sh: the OpenAI client libraries
# (tests/interop/openai/run.sh), the page at GET / and a page from another
# origin (CORS) in headless Chromium, nginx in front of two instances
# (docs/deploy.md), and curl on the HTTP edges (X-Request-Id, a preflight,
# vLLM's paths: tests/interop/edges/run.sh). It apt-installs chromium
# and nginx when they are missing and it may, and builds build/tokenwire
# (always the plain build: the instances must run at full speed).
.PHONY: interop
interop:
	env -u MAKEFLAGS -u MFLAGS bash tests/interop/run.sh

# Files embedded with .incbin (common/embed.h), which -MMD cannot see: rebuild
# the embedding object when one of them changes.
$(BUILD)/obj/src/web/assets.o build/fuzz/obj/src/web/assets.o: $(wildcard src/web/page/*)
$(BUILD)/obj/src/tokenizer/embedded.o build/fuzz/obj/src/tokenizer/embedded.o: \
  src/tokenizer/data/encoder.json src/tokenizer/data/vocab.bpe
$(BUILD)/obj/src/model/serving_model.o build/fuzz/obj/src/model/serving_model.o: \
  src/model/data/gpt2-fortunes/config.json src/model/data/gpt2-fortunes/model.safetensors
