// fsdp-train-native: the runtime's command-line entry. Users run it through `npx fsdp-train`,
// which validates and resolves the config first (bin/fsdp-train.mjs).
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "runtime/device_probe.h"

namespace {

int print_probe() {
  const fsdp::DeviceProbe p = fsdp::probe_devices();
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : p.gpus) {
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"memory_bytes", g.memory_bytes},
                    {"compute_capability", std::to_string(g.compute_capability_major) + "." + std::to_string(g.compute_capability_minor)}});
  }
  nlohmann::json out = {
      {"cpu", {{"logical_cores", p.cpu.logical_cores}, {"omp_max_threads", p.cpu.omp_max_threads},
               {"memory_bytes", p.cpu.memory_bytes}, {"model_name", p.cpu.model_name}}},
      {"gpus", gpus},
      {"cuda_built", p.cuda_built},
      {"blas", p.blas},
  };
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

// What this build can do, so the editor can tell a partial build from a missing one.
int print_version() {
  nlohmann::json out = {{"name", "fsdp-train-native"}, {"version", "0.1.0"}, {"capabilities", nlohmann::json::array({"probe"})}};
  std::cout << out.dump() << "\n";
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--probe") == 0) return print_probe();
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) return print_version();
  std::cerr << "usage: fsdp-train-native --probe | --version\n";
  return 2;
}
