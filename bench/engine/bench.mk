# Engine benchmark binary (bench/engine/). Included by the top-level Makefile
# (include bench/*/bench.mk); standalone:
#   make -f Makefile -f bench/engine/bench.mk build/bench/engine_bench
# Uses the Makefile's $(BUILD), $(CXX), object rule and layer archives.

ENGINE_BENCH_BIN := $(BUILD)/bench/engine_bench

$(ENGINE_BENCH_BIN): $(BUILD)/obj/bench/engine/engine_bench.o $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) $(STATIC) -o $@ $< $(LIBS_GROUP) $(LDFLAGS)

.PHONY: bench-engine
bench-engine: $(ENGINE_BENCH_BIN)
	bash bench/engine/run.sh
