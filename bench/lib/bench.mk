# Rules for the bench's shared library code (bench/lib/*.cc: the SVG chart
# writer, the result-file convention, the load generators' client loop and
# its event loop, the machine floors of the CPU benches and their --isa / --weights lists, the
# verdicts against each result's targets and the targets the streams scenarios share; common.sh,
# sourced by the bench scripts, names a run's folder and lets the machine settle between benches).
# Include from the top-level Makefile after its own variables are set:
#
#   include bench/lib/bench.mk
#
# and link $(BENCH_LIB) into each bench program, e.g.
#
#   $(BUILD)/bench/loadgen: $(BUILD)/obj/bench/loadgen.o $(BENCH_LIB) $(LAYER_LIBS)
#   	$(CXX) -o $@ $(filter %.o,$^) $(BENCH_LIB) $(LIBS_GROUP) $(LDFLAGS)
#
# Sources include their own headers by relative path ("svg.h"), so no extra
# -I is needed; bench programs include "lib/svg.h" with -Ibench, or
# "../lib/svg.h". The generic $(BUILD)/obj/%.o rule compiles them.
# Every test binary links $(BENCH_LIB) (tests/bench checks the charts and the verdicts).

BENCH_LIB_SRCS := $(wildcard bench/lib/*.cc)
BENCH_LIB := $(BUILD)/lib/benchlib.a

$(BENCH_LIB): $(BENCH_LIB_SRCS:%.cc=$(BUILD)/obj/%.o)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^
