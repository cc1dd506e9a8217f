// Reading a run config file (JSON) for the command line: the resolved config `fsdp-train` writes,
// or one a user hands to fsdp-train-native on a remote host. "-" reads standard input.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace fsdp {

/** Parses the file; throws std::runtime_error "PATH: line L column C: ..." on bad JSON. */
nlohmann::json read_config_file(const std::string& path);

/** The folder relative paths in the config are resolved against ("" for standard input). */
std::string config_base_dir(const std::string& path);

}  // namespace fsdp
