// A problem with a run config, named by its dotted key so the message says where.
#pragma once
#include <string>
#include <vector>

namespace fsdp {

struct ConfigProblem {
  std::string path;     // e.g. "model.n_heads"
  std::string message;  // e.g. "5 does not divide model.d_model (128)"
  bool warning = false;
};

inline bool has_errors(const std::vector<ConfigProblem>& problems) {
  for (const auto& p : problems)
    if (!p.warning) return true;
  return false;
}

/** "where path: message", the form every front end prints. */
inline std::string format_problem(const std::string& where, const ConfigProblem& p) {
  return where + " " + (p.path.empty() ? "" : p.path + ": ") + (p.warning ? "warning: " : "") + p.message;
}

}  // namespace fsdp
