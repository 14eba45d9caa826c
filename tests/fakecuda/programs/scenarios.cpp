// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/programs/scenarios.cpp: the dispatch of the scenarios that cudart_like and
// lcuda_program run: run_scenario maps a scenario name to its function (in scenario_*.cpp), run
// against the fake alone ("fake": the answers the real driver gives) or under the shim ("shim":
// the caching pool's behaviour, seen through the fake's counters); program_main and the checks
// before cuInit. Each scenario prints what it checks; the first failed check exits 1. Not a place
// for the scenarios themselves (scenario_*.cpp) nor for shim internals: only what a program and
// the driver can observe.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "scenarios.h"

namespace fakecuda_test {

void check_before_init(const Driver& d, Mode mode) {
  int version = 0;
  FC_OK(d, d.DriverGetVersion(&version));
  if (mode != Mode::kFake) return;
  say("before cuInit: calls fail with CUDA_ERROR_NOT_INITIALIZED, cuDriverGetVersion works (%d)",
      version);
  int count = 0;
  FC_EXPECT_RC(d, d.DeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr p = 0;
  FC_EXPECT_RC(d, d.MemAlloc(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
  CUcontext ctx = nullptr;
  FC_EXPECT_RC(d, d.CtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
}

int run_scenario(const Driver& d, const std::string& scenario, Mode mode) {
  bool shim = mode == Mode::kShim;
  const std::map<std::string, std::function<int()>> scenarios = {
      {"cache_hit", [&] { return alloc_free_loop(d, shim); }},
      {"disable", [&] { return alloc_free_loop(d, false); }},
      {"errors", [&] { return errors(d, mode); }},
      {"meminfo", [&] { return meminfo(d, mode, false); }},
      {"meminfo_fraction", [&] { return meminfo(d, mode, true); }},
      {"address_range", [&] { return address_range(d, mode); }},
      {"threads", [&] { return threads(d, mode); }},
      {"two_devices", [&] { return two_devices(d, mode); }},
      {"fork", [&] { return fork_scenario(d, mode); }},
      {"streams_fence", [&] { return shim ? streams_shim(d, "auto") : streams_fake(d); }},
      {"streams_fence_none", [&] { return streams_shim(d, "none"); }},
      {"streams_fence_sync", [&] { return streams_shim(d, "sync"); }},
      // The same checks with the shim's per-thread caches forced on (thread_cache:always).
      {"threads_tc", [&] { return threads(d, mode); }},
      {"errors_tc", [&] { return errors(d, mode); }},
      {"streams_fence_tc", [&] { return shim ? streams_shim(d, "auto") : streams_fake(d); }},
      {"streams_fence_none_tc", [&] { return streams_shim(d, "none"); }},
      {"fork_tc", [&] { return fork_scenario(d, mode); }},
      {"two_devices_tc", [&] { return two_devices(d, mode); }},
      {"cache_hit_tc", [&] { return alloc_free_loop(d, shim); }},
      // scenario_thread_cache.cpp: the caches themselves, and the same checks with them off.
      {"thread_cache", [&] { return thread_cache(d, mode, "thread_cache:always", true); }},
      {"thread_cache_never", [&] { return thread_cache(d, mode, "thread_cache:never", false); }},
      {"thread_cache_auto", [&] { return thread_cache_auto(d, mode); }},
      {"thread_cache_summary", [&] { return thread_cache(d, mode, "thread_cache:always", false); }},
      {"passthrough", [&] { return passthrough(d); }},
      {"hidden_reset", [&] { return hidden_reset(d); }},
      {"reset_releases", [&] { return reset_releases(d, mode, false); }},
      {"many_contexts", [&] { return many_contexts(d, mode); }},
      {"many_contexts_tc", [&] { return many_contexts(d, mode); }},
      {"address_range_tc", [&] { return address_range(d, mode); }},
      {"many_contexts_expandable", [&] { return many_contexts(d, mode); }},
      {"contexts_threads", [&] { return contexts_threads(d); }},
      {"contexts_threads_tc", [&] { return contexts_threads(d); }},
      {"contexts_threads_expandable", [&] { return contexts_threads(d); }},
      {"ipc", [&] { return ipc(d, mode, false); }},
      {"ipc_expandable", [&] { return ipc(d, mode, true); }},
      // Scenarios again with expandable segments (the virtual memory API behind the pool).
      {"reset_releases_expandable", [&] { return reset_releases(d, mode, true); }},
      {"errors_expandable", [&] { return errors(d, mode); }},
      {"meminfo_expandable", [&] { return meminfo(d, mode, false); }},
      {"threads_expandable", [&] { return threads(d, mode); }},
      {"two_devices_expandable", [&] { return two_devices(d, mode); }},
      {"streams_fence_expandable",
       [&] { return shim ? streams_shim(d, "auto") : streams_fake(d); }},
      {"fork_expandable", [&] { return fork_scenario(d, mode); }},
      {"address_range_expandable", [&] { return address_range(d, mode); }},
      {"fake_api", [&] { return fake_api(d); }},
      // scenario_fences.cpp: the shortcuts of reuse_fence:auto.
      {"fence_shortcuts", [&] { return fence_shortcuts(d, mode, false); }},
      {"fence_shortcuts_tc", [&] { return fence_shortcuts(d, mode, true); }},
      {"fence_shortcuts_expandable", [&] { return fence_shortcuts(d, mode, false); }},
      {"oom_explained", [&] { return oom_explained(d, mode); }},
      {"oom_steps", [&] { return oom_steps(d); }},
      // scenario_context_cycles.cpp: a long life of contexts, resident memory flat.
      {"context_cycles", [&] { return context_cycles(d, mode); }},
      {"context_cycles_tc", [&] { return context_cycles(d, mode); }},
      // scenario_faults.cpp: run by fault_sweep.sh with each driver fault in turn.
      {"faults", [&] { return faults(d, mode); }},
      {"faults_expandable", [&] { return faults(d, mode); }},
      {"fault_cases", [&] { return fault_cases(d, mode); }},
      {"fault_cases_expandable", [&] { return fault_cases(d, mode); }},
      {"fault_cases_sync", [&] { return fault_cases(d, mode); }},
      // scenario_idle_unmap.cpp: a slow cuMemUnmap (FAKECUDA_SLOW) of the idle-release thread.
      {"idle_unmap_wait", [&] { return idle_unmap_wait(d, mode); }},
      // scenario_idle_oom.cpp: the device full while the idle-release thread gives back.
      {"idle_oom_wait", [&] { return idle_oom_wait(d, mode); }},
      // scenario_idle_cache.cpp: the threads' caches give back what they keep unused.
      {"idle_thread_cache", [&] { return idle_thread_cache(d, mode); }},
      {"idle_thread_cache_expandable", [&] { return idle_thread_cache(d, mode); }},
      // scenario_handles.cpp: expandable_handle_mb's driver allocations, made and given back.
      {"expandable_handles", [&] { return expandable_handles(d, mode); }},
      {"threads_handles", [&] { return threads(d, mode); }},
      // scenario_capture.cpp: the driver's answers during stream captures.
      {"capture_rules", [&] { return capture_rules(d, mode); }},
      {"capture_rules_expandable", [&] { return capture_rules(d, mode); }},
      {"capture_rules_tc", [&] { return capture_rules(d, mode); }},
  };
  auto it = scenarios.find(scenario);
  if (it == scenarios.end()) {
    std::fprintf(stderr, "unknown scenario '%s'; known:", scenario.c_str());
    for (const auto& [name, run] : scenarios) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  int rc = it->second();
  if (rc == 0) std::printf("PASS %s\n", scenario.c_str());
  std::fflush(stdout);
  return rc;
}

int program_main(const Driver& d, int argc, char** argv, const char* program) {
  if (argc != 3 || (std::strcmp(argv[2], "shim") != 0 && std::strcmp(argv[2], "fake") != 0)) {
    std::fprintf(stderr, "usage: %s <scenario> shim|fake\n", program);
    return 2;
  }
  Mode mode = std::strcmp(argv[2], "shim") == 0 ? Mode::kShim : Mode::kFake;
  check_before_init(d, mode);
  FC_OK(d, d.Init(0));
  CUdevice dev = 0;
  FC_OK(d, d.DeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  FC_OK(d, d.DevicePrimaryCtxRetain(&ctx, dev));
  FC_OK(d, d.CtxSetCurrent(ctx));
  return run_scenario(d, argv[1], mode);
}

}  // namespace fakecuda_test
