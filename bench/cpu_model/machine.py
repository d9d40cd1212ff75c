"""The CPU as the benches record it (bench/lib/result.h MachineCpu): the
first processor's model name, then its CPUID family, model and stepping.
Imported by run.sh's and ggml_peer.sh's result writers."""


def cpu_name():
    info = {}
    for l in open("/proc/cpuinfo"):
        if not l.strip():
            break
        k, _, v = l.partition(":")
        info.setdefault(k.strip(), v.strip())
    cpu = info.get("model name", "unknown CPU")
    if "cpu family" in info and "model" in info:
        cpu += f" (family {info['cpu family']}, model {info['model']}, stepping {info.get('stepping', '?')})"
    return cpu
