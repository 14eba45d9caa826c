// SPDX-License-Identifier: Apache-2.0
// shim/pools/idle_release.h: the idle-release thread (idle_release_ms; docs/shim.md, "Idle
// release"). With idle_release_ms set, start_idle_release, called once from the shim's
// initialization (lifecycle/startup.cpp), starts one thread, cudapool-idle, that ticks every pool's
// idle clock every idle_release_ms / 4 (pool::idle_tick_ns): under the pool's lock, as
// DevicePool::release_idle_tick says. When a tick would give memory back, the thread first
// synchronizes the pool's context without holding the lock (so the program's calls never wait for
// the device behind it), then ticks: what it releases was freed before that synchronization.
// Each tick also hands back to the pool what a thread's cache kept and left unused for more than
// kIdleTicks ticks (thread_cache_idle_tick), so that cached memory goes back too. Nothing while a
// stream capture is in progress. No hook calls anything here: the hot path pays only the pool's
// stamp of a cached block and a thread cache's count of its uses. A fork child has no thread (its
// pools keep what they cache); at exit the thread is stopped (at most 2 s) before the exit report.
#pragma once

namespace cudapool::shim {

// From the shim's initialization, once the settings are read and the shim pools.
void start_idle_release();
// At exit (start_idle_release registers it): stops the thread, waiting at most 2 s.
void stop_idle_release();

}  // namespace cudapool::shim
