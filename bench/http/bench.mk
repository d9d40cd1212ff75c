# HTTP server micro-benchmark binary. Included by the top-level Makefile (or
# on a Makefile without that include: make -f Makefile -f bench/http/bench.mk
# build/bench/http_server_bench).
# Uses the Makefile's $(BUILD), $(CXX), object rule and layer archives.

HTTP_BENCH_BIN := $(BUILD)/bench/http_server_bench

$(HTTP_BENCH_BIN): $(BUILD)/obj/bench/http/http_server_bench.o $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) $(STATIC) -o $@ $< $(LIBS_GROUP) $(LDFLAGS)

.PHONY: bench-http
bench-http: $(HTTP_BENCH_BIN)
	bash bench/http/run.sh
