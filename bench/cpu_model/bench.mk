# The CPU model benchmark (bench/cpu_model/): `make build/bench_cpu_model`.
# Included by the top-level Makefile (bench/*/bench.mk). Always the plain
# optimised build: it links the plain build's layer archives, even when
# SAN is set.
build/bench_cpu_model: build/obj/bench/cpu_model/bench_cpu_model.o $(patsubst $(BUILD)/%,build/%,$(BENCH_LIB)) $(patsubst $(BUILD)/%,build/%,$(LAYER_LIBS))
	$(CXX) $(STATIC) -o $@ $(filter %.o,$^) -Wl,--start-group $(filter %.a,$^) -Wl,--end-group $(LDFLAGS)

# Where the matmul time goes, batch 1 and a prefill pass (bench/cpu_model/matmul_probe.cc):
# `make build/matmul_probe`.
build/matmul_probe: build/obj/bench/cpu_model/matmul_probe.o $(patsubst $(BUILD)/%,build/%,$(BENCH_LIB)) $(patsubst $(BUILD)/%,build/%,$(LAYER_LIBS))
	$(CXX) $(STATIC) -o $@ $(filter %.o,$^) -Wl,--start-group $(filter %.a,$^) -Wl,--end-group $(LDFLAGS)
