# Engine benchmark binary (bench/engine/). Included by the top-level Makefile
# (include bench/*/bench.mk); standalone:
#   make -f Makefile -f bench/engine/bench.mk build/bench/engine_bench
# Uses the Makefile's $(BUILD), $(CXX), object rule, layer archives and the
# bench's shared library $(BENCH_LIB) (the SVG chart writer, bench/lib).

ENGINE_BENCH_BIN := $(BUILD)/bench/engine_bench

$(ENGINE_BENCH_BIN): $(BUILD)/obj/bench/engine/engine_bench.o $(BENCH_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) $(STATIC) -o $@ $< $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)

.PHONY: bench-engine
bench-engine: $(ENGINE_BENCH_BIN)
	bash bench/engine/run.sh
