#include "config/load.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace fsdp {

nlohmann::json read_config_file(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open the config file");
    text << in.rdbuf();
  }
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into a line and column.
    const std::string s = text.str();
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < s.size(); ++i) {
      if (s[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    throw std::runtime_error((path == "-" ? std::string("<stdin>") : path) + ":" + std::to_string(line) + ":" +
                             std::to_string(col) +
                             ": not valid JSON (fsdp-train-native reads the resolved JSON config; run YAML configs "
                             "through `npx fsdp-train`)");
  }
}

std::string config_base_dir(const std::string& path) {
  if (path == "-") return "";
  return std::filesystem::absolute(path).parent_path().string();
}

}  // namespace fsdp
