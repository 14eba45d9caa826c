// SPDX-License-Identifier: Apache-2.0
// shim/recording/python_stack.h: the Python stack of the thread that asks for memory
// (CUDAPOOL_BACKTRACE=python or all), for the log: file, line and function of each frame, innermost
// first, interned into the log's StackTable (log/stack_table.h), whose definition lines the writer
// puts before the first event that names a stack. The interpreter's stable C API is found with
// dlsym in the process (python3 exports it; a libpython loaded RTLD_GLOBAL too): the shim links no
// Python. Called by the allocation hook before any pool lock. The hazards are PyTorch's recorder's
// (torch/csrc/profiler/python/combined_traceback.cpp): PyTorch's bindings release the GIL around
// ATen calls, so the GIL is taken again here (PyGILState_Ensure) when the thread has a Python
// thread state; a thread without one (a library's own thread), an interpreter not initialized or
// finalizing (where PyGILState_Ensure may end the thread), and a nested call from Python code run
// while a stack is taken are skipped and counted. Code objects seen are kept alive (one reference
// each, never dropped) so that an address never names two code objects. Not here: native return
// addresses (event_log.cpp), the definition lines (log/).
#pragma once

#include <cstdint>

#include "log/format.h"
#include "log/stack_table.h"

namespace cudapool::shim {

// The id in `table` of the calling thread's Python stack, at most `depth` frames (innermost
// first); 0 when none was taken (counted by reason). Takes and gives back the GIL when the thread
// does not hold it. `table` is the current log's: a new table (a new log) starts its frames anew.
std::uint32_t capture_python_stack(log::StackTable& table, int depth);

// How many stacks were taken and why the others were not, for the summary line.
log::Summary::PythonStacks python_stack_counts();

}  // namespace cudapool::shim
