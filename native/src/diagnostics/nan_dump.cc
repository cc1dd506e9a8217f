#include "diagnostics/nan_dump.h"

#include <cstdio>
#include <filesystem>

#include "runtime/files.h"

namespace fsdp {

std::string write_nan_dump(const std::string& run_dir, const NanDump& d) {
  namespace fs = std::filesystem;
  char name[64];
  std::snprintf(name, sizeof name, "step-%08ld-nan.json", d.step);
  const fs::path rel = fs::path("diagnostics") / name;
  fs::create_directories(fs::path(run_dir) / "diagnostics");
  nlohmann::json stats = nlohmann::json::array();
  for (const auto& s : d.stats) {
    stats.push_back({{"phase", s.phase},
                     {"kind", s.kind},
                     {"layer", layer_name(s.layer, d.n_layers)},
                     {"op", s.op},
                     {"name", s.name},
                     {"mean", s.stats.mean},
                     {"std", s.stats.std},
                     {"max_abs", s.stats.max_abs},
                     {"nonfinite", s.stats.nonfinite}});
  }
  const nlohmann::json doc = {{"format", "fsdp-studio-nan-dump"},
                              {"version", 1},
                              {"step", d.step},
                              {"where", d.where},
                              {"tokens", d.batches},
                              {"stats", stats}};
  write_file_atomically((fs::path(run_dir) / rel).string(), doc.dump(1) + "\n");
  return rel.string();
}

}  // namespace fsdp
