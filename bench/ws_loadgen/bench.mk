# The WebSocket load generator (bench/ws_loadgen/): the resume storm
# and 1,000-stream scenarios over GET /v1/ws. Included by the top-level
# Makefile; objects come from its generic $(BUILD)/obj/%.o rule (-Ibench puts
# "ws_loadgen/..." and "loadgen/..." on the path). It reuses bench/loadgen's
# report writer, server child process, scenario helpers (prompts, the
# emission-log reader, JSON report cells) and command line by linking their
# objects.
#
#   make build/bench/ws_loadgen
#   bash bench/ws_loadgen/run.sh          (quick; BENCH=full for full sizes)

WS_LOADGEN_BIN := $(BUILD)/bench/ws_loadgen
WS_LOADGEN_OBJS := $(patsubst %.cc,$(BUILD)/obj/%.o,$(wildcard bench/ws_loadgen/*.cc)) \
                   $(BUILD)/obj/bench/loadgen/report.o $(BUILD)/obj/bench/loadgen/server_process.o \
                   $(BUILD)/obj/bench/loadgen/scenario_util.o $(BUILD)/obj/bench/loadgen/engine.o \
                   $(BUILD)/obj/bench/loadgen/session.o $(BUILD)/obj/bench/loadgen/cli.o

$(WS_LOADGEN_BIN): $(WS_LOADGEN_OBJS) $(BENCH_LIB) $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(filter %.o,$^) $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)
