// SPDX-License-Identifier: Apache-2.0
// log/path_template.h: the log path template (CUDAPOOL_LOG's value): %p the process id, %r the
// rank (RANK, else OMPI_COMM_WORLD_RANK, else SLURM_PROCID, else 0), %h the host name, %% a percent
// sign. Any other %x, or a % at the end, is an error; so is a rank that is not made of letters,
// digits, '_' and '-' (it could climb out of the log's folder: RANK=..). Also the glob of every
// name a template can expand to (path_template_glob). Pure: the environment and the host come in
// as arguments. It does not create the file (file.h does) or look for files (no glob(3) here).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace cudapool::log {

// getenv's shape: the value of a variable, or nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

struct ExpandedPath {
  std::string path;   // valid when error is empty
  std::string error;  // what is wrong with the template, for one warning
  bool ok() const { return error.empty(); }
};

// The first set and non-empty of RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID (the launchers' rank:
// torchrun, Open MPI, Slurm): its name and value; name nullptr when none is.
struct RankVariable {
  const char* name = nullptr;
  std::string value;
};
RankVariable rank_variable(const EnvLookup& env);

// The rank for %r: rank_variable's value; "0" when none is set.
std::string rank_from_env(const EnvLookup& env);

// Expands the template. A rank of anything but [0-9A-Za-z_-] is an error naming its variable; a
// '/' inside the host name becomes '_' and a host name "." or ".." is an error, so that a value
// never adds or climbs a directory. An empty template or an empty result is an error.
ExpandedPath expand_path_template(std::string_view tmpl, const EnvLookup& env, std::uint64_t pid,
                                  std::string_view host);

// A glob(3) pattern (backslash escapes, no GLOB_NOESCAPE) of the names the template expands to for
// any pid, rank and host: %p, %r and %h as '*', %% as '%', every other byte as itself ('\\', '*',
// '?' and '[' escaped). In path: the pattern; error: the template's own errors (those of
// expand_path_template that do not depend on the environment or the host).
ExpandedPath path_template_glob(std::string_view tmpl);

}  // namespace cudapool::log
