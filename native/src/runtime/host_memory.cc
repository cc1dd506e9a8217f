#include "runtime/host_memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace fsdp {

namespace {

std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stoull(word);
  } catch (...) {
    return std::nullopt;
  }
}

/** A key's value in a "key value" file (memory.stat, /proc/meminfo). */
std::uint64_t stat_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

struct CgroupFiles {
  std::string root;  // where the hierarchy is mounted
  std::string path;  // the process's cgroup in it
  const char* limit;
  const char* usage;
  const char* inactive_file;  // reclaimable page cache, counted in usage
  std::uint64_t unlimited_above;
};

std::optional<CgroupFiles> own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      return CgroupFiles{"/sys/fs/cgroup", path, "memory.max", "memory.current", "inactive_file", ~0ull};
    }
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "memory")
        return CgroupFiles{"/sys/fs/cgroup/memory", path,      "memory.limit_in_bytes", "memory.usage_in_bytes",
                           "total_inactive_file",   1ull << 62};
  }
  return std::nullopt;
}

}  // namespace

HostMemory host_memory() {
  HostMemory m;
  m.mem_available = 1024 * stat_value("/proc/meminfo", "MemAvailable:");
  m.available = m.mem_available;
  const auto cg = own_cgroup();
  if (!cg) return m;
  // The process's cgroup and every one above it: the tightest room left decides.
  for (std::string path = cg->path;;) {
    const std::string dir = cg->root + (path == "/" ? "" : path);
    const auto limit = read_number(dir + "/" + cg->limit);
    if (limit && *limit < cg->unlimited_above) {
      const std::uint64_t used = read_number(dir + "/" + cg->usage).value_or(0);
      const std::uint64_t cache = stat_value(dir + "/memory.stat", cg->inactive_file);
      const std::uint64_t held = used > cache ? used - cache : 0;
      const std::uint64_t room = *limit > held ? *limit - held : 0;
      if (!m.cgroup_limit || room < m.available) {
        m.cgroup_limit = limit;
        m.cgroup_used = held;
        m.cgroup = dir;
        if (room < m.available) m.available = room;
      }
    }
    if (path.empty() || path == "/") break;
    const auto slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return m;
}

std::string human_bytes(std::uint64_t bytes) {
  char buf[32];
  const double gib = static_cast<double>(bytes) / (1ull << 30);
  if (gib >= 1)
    std::snprintf(buf, sizeof buf, "%.1f GiB", gib);
  else if (bytes >= (1u << 20))
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%.0f KiB", static_cast<double>(bytes) / 1024);
  return buf;
}

}  // namespace fsdp
