# The streaming load generator (bench/loadgen/) and the RESULTS.md renderer
# (bench/render/). Included by the top-level Makefile; objects come from its
# generic $(BUILD)/obj/%.o rule (-Ibench puts "loadgen/..." on the path).
# The chaos scenario drives WebSocket streams too, so the loadgen links the
# WebSocket client of bench/ws_loadgen (its engine and stream, not its
# scenarios or main).
#
#   make build/bench/loadgen build/bench/render
#   bash bench/run.sh        (= make bench)

LOADGEN_BIN := $(BUILD)/bench/loadgen
RENDER_BIN  := $(BUILD)/bench/render

LOADGEN_OBJS := $(patsubst %.cc,$(BUILD)/obj/%.o,$(wildcard bench/loadgen/*.cc)) \
                $(BUILD)/obj/bench/ws_loadgen/ws_engine.o $(BUILD)/obj/bench/ws_loadgen/ws_stream.o

$(LOADGEN_BIN): $(LOADGEN_OBJS) $(BENCH_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(filter %.o,$^) $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)

$(RENDER_BIN): $(patsubst %.cc,$(BUILD)/obj/%.o,$(wildcard bench/render/*.cc)) $(BENCH_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(filter %.o,$^) $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)

.PHONY: bench-streams
bench-streams: $(LOADGEN_BIN) $(RENDER_BIN)
	bash bench/streams/run.sh
