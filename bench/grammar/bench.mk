# Structured output's bench (bench/grammar/): the grammar matcher's speed on
# GPT-2's vocabulary and the decode cost of a grammar. Included by the
# top-level Makefile (bench/*/bench.mk).

GRAMMAR_BENCH_BIN := $(BUILD)/bench/grammar_bench

$(GRAMMAR_BENCH_BIN): $(BUILD)/obj/bench/grammar/grammar_bench.o $(BENCH_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) $(STATIC) -o $@ $< $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)

.PHONY: bench-grammar
bench-grammar: $(GRAMMAR_BENCH_BIN)
	bash bench/grammar/run.sh
