# The GPU bench (bench/gpu/), CUDA builds only: build/cuda/bench/gpu_bench.
# bench/gpu/run.sh OUTDIR runs it on a GPU machine with everything else that
# needs one (the CUDA issue's one script).

ifeq ($(CUDA),1)
GPU_BENCH_BIN := $(BUILD)/bench/gpu_bench

$(GPU_BENCH_BIN): $(BUILD)/obj/bench/gpu/gpu_bench.o $(BENCH_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(call quiet,LD,$@)$(CXX) -o $@ $< $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)
endif
