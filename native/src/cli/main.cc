// fsdp-train-native: the runtime's command-line entry. People run it through `npx fsdp-train`,
// which validates and resolves the YAML config and creates the run directory first; remote hosts
// may run it directly with a resolved config JSON.
//
//   fsdp-train-native --version               what this build can do (JSON)
//   fsdp-train-native --probe                 CPU, memory, GPUs (JSON)
//   fsdp-train-native --check CONFIG.json     the runtime's own checks; exit 2 on errors
//   fsdp-train-native --plan CONFIG.json      the memory plan (JSON, native/MEMORY.md)
//
// CONFIG "-" reads standard input. Exit codes: 0 ok, 1 failure, 2 bad arguments or config.
#include <cstring>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "config/load.h"
#include "config/validate.h"
#include "memory/memory_plan.h"
#include "runtime/device_probe.h"

namespace {

constexpr int kExitConfig = 2;

int usage() {
  std::cerr << "usage: fsdp-train-native --version | --probe | --check CONFIG.json | --plan CONFIG.json\n";
  return kExitConfig;
}

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

// What this build can do, so the editor can tell a partial build from a missing one.
int print_version() {
  nlohmann::json out = {{"name", "fsdp-train-native"}, {"version", "0.1.0"}, {"capabilities", {"probe", "check", "plan"}}};
  std::cout << out.dump() << "\n";
  return 0;
}

/** Reads and checks a config; prints problems as "FILE key: message". Returns false on errors. */
bool load_config(const std::string& path, bool check_files, fsdp::RunConfig& config) {
  nlohmann::json value;
  try {
    value = fsdp::read_config_file(path);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return false;
  }
  fsdp::ValidateOptions options;
  options.check_files = check_files;
  options.cuda_built = fsdp::probe_devices().cuda_built;
  const auto problems = fsdp::check_run_config(value, fsdp::config_base_dir(path), options, &config);
  for (const auto& p : problems) std::cerr << fsdp::format_problem(path == "-" ? "<stdin>" : path, p) << "\n";
  return !fsdp::has_errors(problems);
}

int print_plan(const std::string& path) {
  nlohmann::json value;
  try {
    value = fsdp::read_config_file(path);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return kExitConfig;
  }
  // A plan can be made for configs this build cannot run (cuda, bfloat16, several ranks).
  const fsdp::ParsedConfig parsed = fsdp::parse_run_config(value, fsdp::config_base_dir(path));
  for (const auto& p : parsed.problems) std::cerr << fsdp::format_problem(path, p) << "\n";
  if (!parsed.ok()) return kExitConfig;
  std::cout << fsdp::plan_memory(parsed.config).to_json().dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc >= 2 ? argv[1] : "";
  if (cmd == "--probe" && argc == 2) return print_probe();
  if (cmd == "--version" && argc == 2) return print_version();
  if (cmd == "--plan" && argc == 3) return print_plan(argv[2]);
  if (cmd == "--check" && argc == 3) {
    fsdp::RunConfig config;
    return load_config(argv[2], true, config) ? 0 : kExitConfig;
  }
  return usage();
}
