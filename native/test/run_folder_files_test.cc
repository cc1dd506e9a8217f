// Issue 40, items 2 and 3: the runtime writes a run folder's files only when they are its own
// regular files — a symbolic link, a FIFO or a device put in the folder's place is refused by name,
// and nothing reaches the file behind it — and reads metrics.jsonl the same way, a bounded amount
// at a time, so a FIFO, /dev/zero or /dev/urandom cannot hang it or fill its memory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "file_fixtures.h"
#include "metrics/metrics_log.h"
#include "metrics/tensorboard_writer.h"
#include "run_folder/run_folder_lock.h"
#include "runtime/files.h"
#include "train/run_folder.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/** What f throws, or "" when it throws nothing. */
template <typename F>
std::string refusal_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kOutsideText = "a file of the person's, outside the run folder\n";

TEST(RunFolderFiles, EveryWriterRefusesALinkByNameAndLeavesTheFileBehindItAlone) {
  test::TempFolder dir;
  const fs::path outside = dir.path / "outside.txt";
  test::write_bytes(outside, kOutsideText);
  const fs::path run = dir.path / "run";
  fs::create_directories(run);
  const auto link_to_outside = [&](const char* name) {
    const fs::path p = run / name;
    fs::create_symlink(outside, p);
    return p.string();
  };

  const std::string metrics = link_to_outside("metrics.jsonl");
  std::string why = refusal_of([&] { MetricsLog log(metrics, false); });
  EXPECT_EQ(why, metrics + ": is a symbolic link, not a regular file: not written");

  const std::string lock = link_to_outside("run.lock");
  why = refusal_of([&] { RunFolderLock held(run.string()); });
  EXPECT_EQ(why, lock + ": is a symbolic link, not a regular file: not written");

  const std::string manifest = link_to_outside("manifest.json");
  why = refusal_of([&] { write_file_in_place(manifest, "{}\n"); });
  EXPECT_EQ(why, manifest + ": is a symbolic link, not a regular file: not written");
  // A temporary name planted as a link is not written through either.
  const std::string tmp = link_to_outside(("state.json.tmp-" + std::to_string(::getpid())).c_str());
  why = refusal_of([&] { write_file_atomically((run / "state.json").string(), "{}\n"); });
  EXPECT_EQ(why, tmp + ": is a symbolic link, not a regular file: not written");

  EXPECT_EQ(bytes_of(outside), kOutsideText) << "a writer followed a link out of the run folder";
  EXPECT_FALSE(fs::exists(run / "state.json"));
}

TEST(RunFolderFiles, AFifoOrADeviceIsRefusedByWhatItIsWithoutBlocking) {
  test::TempFolder dir;
  const fs::path fifo = dir.path / "metrics.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Without a reader (ENXIO on a non-blocking open) and with one (the open succeeds, fstat refuses).
  EXPECT_EQ(refusal_of([&] { MetricsLog log(fifo.string(), false); }),
            fifo.string() + ": is a FIFO, not a regular file: not written");
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(refusal_of([&] { MetricsLog log(fifo.string(), false); }),
            fifo.string() + ": is a FIFO, not a regular file: not written");
  ::close(reader);

  // /dev/null itself, not a link to it: the device is what is refused.
  EXPECT_EQ(refusal_of([&] { open_regular_for_writing("/dev/null", O_WRONLY | O_APPEND); }),
            "/dev/null: is a device, not a regular file: not written");

  const fs::path folder = dir.path / "run.lock";
  fs::create_directories(folder);
  EXPECT_EQ(refusal_of([&] { RunFolderLock held(dir.path.string()); }),
            folder.string() + ": is a folder, not a regular file: not written");
}

TEST(RunFolderFiles, TheTensorBoardWriterAndARegularFileStillWork) {
  test::TempFolder dir;
  const fs::path metrics = dir.path / "metrics.jsonl";
  {
    MetricsLog log(metrics.string(), false);
    log.log("info", "written");
  }
  EXPECT_NE(bytes_of(metrics).find("\"written\""), std::string::npos);
  { TensorBoardWriter tb(dir.path.string()); }
  std::size_t event_files = 0;
  for (const auto& e : fs::directory_iterator(dir.path))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) ++event_files;
  EXPECT_EQ(event_files, 1u);
}

TEST(RunFolderFiles, TheLastLoggedStepRefusesALinkAFifoAndDevicesAtOnce) {
  test::TempFolder dir;
  const fs::path log = dir.path / "metrics.jsonl";
  // Each of these hung the trainer (a FIFO), filled its memory (/dev/zero) or spun (/dev/urandom)
  // when it read metrics.jsonl line by line to the end; now each is refused before a byte is read.
  ASSERT_EQ(::mkfifo(log.c_str(), 0644), 0);
  EXPECT_EQ(refusal_of([&] { last_step_in_log(log.string()); }), log.string() + ": is a FIFO, not a regular file");
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    fs::remove(log);
    fs::create_symlink(device, log);
    EXPECT_EQ(refusal_of([&] { last_step_in_log(log.string()); }),
              log.string() + ": is a symbolic link, not a regular file")
        << device;
  }
  fs::remove(log);
  EXPECT_EQ(last_step_in_log(log.string()), 0) << "no log: nothing logged";
}

TEST(RunFolderFiles, TheLastLoggedStepIsFoundFromTheEndPastLongLinesAndChunkEdges) {
  test::TempFolder dir;
  const fs::path log = dir.path / "metrics.jsonl";
  const auto step = [](long n) {
    return "{\"v\":1,\"type\":\"step\",\"time\":1,\"step\":" + std::to_string(n) + ",\"loss\":2.5}\n";
  };
  std::string text;
  for (long n = 1; n <= 40000; ++n) text += step(n);  // a few chunks of 1 MiB
  text += "{\"v\":1,\"type\":\"log\",\"time\":1,\"level\":\"info\",\"msg\":\"" + std::string(3 << 20, 'x') + "\"}\n";
  text += "{\"v\":1,\"type\":\"log\",\"time\":1,\"level\":\"info\",\"msg\":\"after \\\"step\\\" 99\"}\n";
  text += "{\"v\":1,\"type\":\"step\",\"ti";  // a torn last line
  test::write_bytes(log, text);
  EXPECT_EQ(last_step_in_log(log.string()), 40000);
  // The last step event, not the largest: a resume that went back logs lower steps after higher ones.
  test::write_bytes(log, step(7) + step(9) + step(3));
  EXPECT_EQ(last_step_in_log(log.string()), 3);
  test::write_bytes(log, "{\"v\":1,\"type\":\"log\",\"time\":1,\"level\":\"info\",\"msg\":\"no steps\"}\n");
  EXPECT_EQ(last_step_in_log(log.string()), 0);
}

}  // namespace
}  // namespace fsdp
