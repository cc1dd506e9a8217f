// Issue 41 item 1: a run's end, as the runtime writes it, names the attempt its owner started it
// for (FSDP_RUN_ATTEMPT), and an attempt has exactly one end: a watchdog's thread and the main
// thread reaching the end together write the first one only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "file_fixtures.h"
#include "train/run_folder.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> run_ends_in(const fs::path& metrics) {
  std::vector<nlohmann::json> ends;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json e = nlohmann::json::parse(line);
    if (e.value("type", "") == "run_end") ends.push_back(e);
  }
  return ends;
}

/** FSDP_RUN_ATTEMPT set for one scope (the owner's hand-over), as it was after. */
class AttemptEnv {
 public:
  explicit AttemptEnv(const char* id) {
    if (const char* v = std::getenv(kRunAttemptEnv)) before_ = v;
    if (id)
      ::setenv(kRunAttemptEnv, id, 1);
    else
      ::unsetenv(kRunAttemptEnv);
  }
  ~AttemptEnv() {
    if (before_.empty())
      ::unsetenv(kRunAttemptEnv);
    else
      ::setenv(kRunAttemptEnv, before_.c_str(), 1);
  }

 private:
  std::string before_;
};

RunConfig without_tensorboard() {
  RunConfig config;
  config.logging.tensorboard = false;
  return config;
}

TEST(RunFolderEnd, TheFirstEndIsTheAttemptsOnlyOneAndNamesIt) {
  test::TempFolder dir;
  AttemptEnv attempt("3f2a9c0d11e4b7a2");
  {
    RunFolder folder(dir.path.string(), without_tensorboard(), /*writer=*/true, /*echo=*/false);
    EXPECT_EQ(folder.attempt(), "3f2a9c0d11e4b7a2");
    folder.end(RunStatus::failed, 7, "rank 1 is gone");
    folder.end(RunStatus::completed, 8, "");
  }
  const auto ends = run_ends_in(dir.path / "metrics.jsonl");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0]["status"], "failed");
  EXPECT_EQ(ends[0]["step"], 7);
  EXPECT_EQ(ends[0]["attempt"], "3f2a9c0d11e4b7a2");
}

TEST(RunFolderEnd, ARuntimeStartedWithoutItsOwnerNamesNoAttempt) {
  test::TempFolder dir;
  AttemptEnv attempt(nullptr);
  {
    RunFolder folder(dir.path.string(), without_tensorboard(), /*writer=*/true, /*echo=*/false);
    folder.end(RunStatus::completed, 2, "");
  }
  const auto ends = run_ends_in(dir.path / "metrics.jsonl");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(ends[0].contains("attempt"));
}

/** FSDP_RUN_OWNER_MERGES set for one scope: the owner that merges a folder's events. */
class OwnerEnv {
 public:
  explicit OwnerEnv(const std::string& dir) { ::setenv(kRunOwnerMergesEnv, dir.c_str(), 1); }
  ~OwnerEnv() { ::unsetenv(kRunOwnerMergesEnv); }
};

TEST(RunFolderEnd, UnderTheOwnerThatMergesTheFolderTheRuntimeWritesAFileOfItsOwn) {
  test::TempFolder dir;
  AttemptEnv attempt("3f2a9c0d11e4b7a2");
  OwnerEnv owner(dir.path.string());
  {
    RunFolder folder(dir.path.string(), without_tensorboard(), /*writer=*/true, /*echo=*/false);
    folder.end(RunStatus::completed, 3, "");
  }
  EXPECT_FALSE(fs::exists(dir.path / "metrics.jsonl")) << "metrics.jsonl is the owner's alone";
  const auto ends = run_ends_in(dir.path / "events" / "3f2a9c0d11e4b7a2" / "runtime.jsonl");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0]["attempt"], "3f2a9c0d11e4b7a2");
}

TEST(RunFolderEnd, AnOwnerOfAnotherFolderLeavesTheRuntimeItsMetricsFile) {
  test::TempFolder dir, other;
  AttemptEnv attempt("3f2a9c0d11e4b7a2");
  OwnerEnv owner(other.path.string());
  EXPECT_EQ(event_log_path(dir.path.string(), "3f2a9c0d11e4b7a2"), (dir.path / "metrics.jsonl").string());
  EXPECT_FALSE(fs::exists(dir.path / "events"));
}

TEST(RunFolderEnd, AnAttemptIdThatWouldLeaveTheRunFolderIsRefusedByName) {
  test::TempFolder dir;
  OwnerEnv owner(dir.path.string());
  for (const char* id : {"../../etc", "a/b", ".", "x y"}) {
    try {
      event_log_path(dir.path.string(), id);
      ADD_FAILURE() << "accepted the attempt id \"" << id << "\"";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("is not an attempt id"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(dir.path / "events"));
}

}  // namespace
}  // namespace fsdp
