// What every bench result file records besides its rows (the convention of
// bench/results/*.json, rendered by bench/render): the machine, the time and
// the load average, and the trailing "notes" and "charts" arrays. Shared by
// the load generators and the engine bench.
//
// Thread-safety: any thread. Reads /proc; never writes files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "json/json.h"

namespace tw::bench {

// /proc/cpuinfo's "model name" and the CPUID family, model and stepping, e.g.
// "AMD EPYC (family 25, model 17, stepping 1)": a hypervisor may shorten the
// name, and the numbers still tell the CPU's generation. "unknown CPU" when
// /proc/cpuinfo has no model name.
std::string MachineCpu();
int MachineCores();        // CPUs this process may run on (what `nproc` prints)
std::string UtcNow();      // 2026-11-30T15:04:05Z
std::string LoadAvg();     // the first three fields of /proc/loadavg

// Writes `"notes": [...], "charts": [{"file": ..., "caption": ...}, ...]`
// into the object `w` is inside. charts: (file name, caption) pairs.
void WriteNotesAndCharts(json::Writer* w, const std::vector<std::string>& notes,
                         const std::vector<std::pair<std::string, std::string>>& charts);

}  // namespace tw::bench
