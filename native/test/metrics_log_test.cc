// The event log (issue 19, item 10): a resumed writer ends a previous writer's unterminated last
// line before appending, so its first event is a line of its own.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "file_fixtures.h"
#include "metrics/metrics_log.h"

namespace fsdp {
namespace {

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(MetricsLog, EndsAnUnterminatedLastLineBeforeAppending) {
  test::TempFolder dir;
  const auto file = dir.path / "metrics.jsonl";
  test::write_bytes(
      file, "{\"v\":1,\"type\":\"log\",\"time\":1,\"level\":\"info\",\"msg\":\"a\"}\n{\"v\":1,\"type\":\"step\",\"ti");
  {
    MetricsLog log(file.string(), false);
    log.log("info", "resumed");
  }
  const auto lines = lines_of(file);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "{\"v\":1,\"type\":\"step\",\"ti");
  const auto event = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(event["msg"], "resumed");
  // A file that ends with its newline gets nothing added; an empty one neither.
  { MetricsLog again(file.string(), false); }
  EXPECT_EQ(lines_of(file).size(), 3u);
  const auto empty = dir.path / "empty.jsonl";
  { MetricsLog fresh(empty.string(), false); }
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);
}

}  // namespace
}  // namespace fsdp
