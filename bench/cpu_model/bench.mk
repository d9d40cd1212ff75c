# The CPU model benchmark (bench/cpu_model/). Included by the top-level
# Makefile:   include bench/cpu_model/bench.mk
# Standalone: make -f Makefile -f bench/cpu_model/bench.mk build/bench_cpu_model
# Always an optimised build (it reuses the plain build's layer archives).
build/bench_cpu_model: build/obj/bench/cpu_model/bench_cpu_model.o $(patsubst $(BUILD)/%,build/%,$(LAYER_LIBS))
	$(CXX) $(STATIC) -o $@ $(filter %.o,$^) -Wl,--start-group $(filter %.a,$^) -Wl,--end-group $(LDFLAGS)
