// SPDX-License-Identifier: Apache-2.0
// shim/control/control_commands.h: what the control endpoint answers. One request line
// ("ping", "stats", "stats json", "prometheus", "empty-cache", "snapshot", "help"), one answer:
// "ok\n" and its body, or one line "error: ...\n". Reads the pools through reports/pool_readings.h
// (each under its lock, copied, then formatted with no lock held); empty-cache gives the idle
// cached segments back (DevicePool::release_idle_segments, never a block in use or behind a reuse
// fence, refused while a stream capture is in progress) and is logged as empty_cache with the
// asking process's pid (requested_by). Runs on the control thread (control.cpp), which does every
// socket I/O itself: nothing here touches a socket. Not here: the socket, its permissions and the
// limits on a request (control_socket.h, control.cpp), the formats' details (control_json.h,
// prometheus_text.h).
#pragma once

#include <string>
#include <string_view>

#include "shim/control/request_context.h"

namespace cudapool::shim {

// The answer to one request line (without its '\n').
std::string answer_request(std::string_view request, const RequestContext& context);

}  // namespace cudapool::shim
