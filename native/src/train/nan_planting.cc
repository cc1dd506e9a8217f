#include "train/nan_planting.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/ops.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

NanPlanting::NanPlanting(const InjectNanConfig& config, const std::string& run_dir, bool writer, Architecture arch)
    : config_(config), run_dir_(run_dir), writer_(writer), arch_(arch) {
  std::ifstream in((fs::path(run_dir_) / "diagnostics" / "injected.json").string());
  if (!in) return;
  const nlohmann::json steps = nlohmann::json::parse(in, nullptr, false);
  if (!steps.is_array()) return;
  for (const auto& s : steps)
    if (s.is_number_integer()) planted_.insert(s.get<long>());
}

bool NanPlanting::due(long step) const {
  return config_.enabled && config_.step == step && !(config_.once && planted_.count(step));
}

std::optional<Planting> NanPlanting::activations(long step) const {
  if (!due(step) || config_.phase == "optimizer") return std::nullopt;
  const std::string op = !config_.op.empty() ? config_.op
                                             : std::string(config_.phase == "forward" ? ops::kDefaultForward
                                                                                      : ops::default_backward(arch_));
  return Planting{config_.phase, config_.layer, op};
}

std::optional<UpdatePoison> NanPlanting::update(long step, const ParamLayout& layout) const {
  if (!due(step) || config_.phase != "optimizer") return std::nullopt;
  return UpdatePoison{layout.block_unit(config_.layer),
                      (config_.op.empty() ? std::string(ops::kDefaultOptimizer) : config_.op) + ".weight"};
}

void NanPlanting::planted(long step) {
  planted_.insert(step);
  if (!writer_) return;
  const fs::path dir = fs::path(run_dir_) / "diagnostics";
  fs::create_directories(dir);
  write_file_atomically((dir / "injected.json").string(), nlohmann::json(planted_).dump() + "\n");
}

}  // namespace fsdp
