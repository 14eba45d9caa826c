// SPDX-License-Identifier: Apache-2.0
// log/json_text.h: JSON text for the log's lines: strings escaped (bytes that are not valid UTF-8
// become \u00XX), numbers, "0x..." hex strings, string arrays, a setting's value as JSON, and
// the ISO 8601 time of the header. These build std::string (the header, the summary, option
// values, the tests); the event line does not use them (it writes into raw memory,
// format_event.cpp). No log lines here (format.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/describe.h"

namespace cudapool::log {

inline constexpr char kHexDigits[] = "0123456789abcdef";

// JSON string helpers, for option values and the tests.
void append_json_string(std::string& out, std::string_view text);
std::string json_string(std::string_view text);
// A setting's value as the JSON of the header's options, by its type (config/describe.h): a
// bool as true/false, a number as written, text as a string.
std::string setting_json(const config::EffectiveSetting& setting);
// unix_ns as "2024-05-01T12:34:56.123456Z".
std::string iso8601_utc(std::uint64_t unix_ns);

// Decimal.
void append_u64(std::string& out, std::uint64_t v);
// "0x..." with the quotes, lower case, no leading zeros.
void append_hex(std::string& out, std::uint64_t v);
// A JSON array of strings.
void append_string_array(std::string& out, const std::vector<std::string>& items);

}  // namespace cudapool::log
