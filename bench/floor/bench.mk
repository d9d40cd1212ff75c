# The floor writer of the streams throughput scenario (bench/floor/): the
# least a server can do to deliver the same events. Included by the
# top-level Makefile; the load generator starts it beside tokenwire.
#
#   make build/bench/floor_writer

FLOOR_WRITER_BIN := $(BUILD)/bench/floor_writer

$(FLOOR_WRITER_BIN): $(BUILD)/obj/bench/floor/floor_writer.o $(LAYER_LIBS)
	@mkdir -p $(dir $@)
	$(call quiet,LD,$@)$(CXX) $(STATIC) -o $@ $< $(LIBS_GROUP) $(LDFLAGS)
