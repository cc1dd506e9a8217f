// The data stream (seeded per-epoch order, prefetching, positions) and the checkpoint format.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>
#include <zlib.h>

#include <cstring>

#include "checkpoint/checkpoint.h"
#include "data/batch_stream.h"
#include "data/sequence_order.h"
#include "fixtures.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;

TEST(SequenceOrder, IsAPermutationThatChangesEveryEpoch) {
  for (std::uint64_t n : {1ull, 2ull, 7ull, 100ull, 1000ull, 4097ull}) {
    std::set<std::uint64_t> seen;
    for (std::uint64_t i = 0; i < n; ++i) seen.insert(SequenceOrder(n, true, 42, 3)[i]);
    EXPECT_EQ(seen.size(), n);
    EXPECT_EQ(*seen.rbegin(), n - 1);
  }
  int same = 0;
  for (std::uint64_t i = 0; i < 1000; ++i)
    same += SequenceOrder(1000, true, 42, 0)[i] == SequenceOrder(1000, true, 42, 1)[i];
  EXPECT_LT(same, 20);
  EXPECT_EQ(SequenceOrder(1000, false, 42, 5)[123], 123u);
}

/** A token file of tokens 0, 1, 2, … (mod 251) written in the format of native/FORMATS.md. */
std::string write_tokens(const fs::path& dir, std::uint64_t count) {
  std::vector<std::uint16_t> tokens(count);
  for (std::uint64_t i = 0; i < count; ++i) tokens[i] = static_cast<std::uint16_t>(i % 251);
  char header[64] = {'F', 'S', 'D', 'P', 'T', 'O', 'K', '\0'};
  const std::uint32_t version = 1, dtype = 1, vocab = 256;
  const auto crc =
      static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(tokens.data()), static_cast<uInt>(2 * count)));
  std::memcpy(header + 8, &version, 4);
  std::memcpy(header + 12, &dtype, 4);
  std::memcpy(header + 16, &count, 8);
  std::memcpy(header + 24, &vocab, 4);
  std::memcpy(header + 28, &crc, 4);
  std::memcpy(header + 32, "byte", 4);
  const std::string path = (dir / "tokens.tok").string();
  std::ofstream out(path, std::ios::binary);
  out.write(header, 64);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(2 * count));
  return path;
}

struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("fsdp-gtest-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  static inline int counter = 0;
};

TEST(BatchStream, YieldsNextTokenTargetsAndTheSameBatchesWithOrWithoutPrefetch) {
  TempDir dir;
  auto file = std::make_shared<const TokenFile>(write_tokens(dir.path, 1001), 256);
  HostAllocator alloc;
  BatchStream prefetched(alloc, file, 3, 10, true, 9, 2), direct(alloc, file, 3, 10, true, 9, 0);
  EXPECT_EQ(prefetched.sequences(), 100u);
  EXPECT_EQ(prefetched.batches_per_epoch(), 33u);  // 100 / 3, the last sequence left over
  for (int k = 0; k < 70; ++k) {                   // over two epochs
    const Batch a = prefetched.next(), b = direct.next();
    for (long i = 0; i < 30; ++i) {
      ASSERT_EQ(a.inputs[i], b.inputs[i]) << "batch " << k;
      ASSERT_EQ(a.targets[i], b.targets[i]);
      ASSERT_EQ(a.targets[i], (a.inputs[i] + 1) % 251);
    }
  }
  // Seeking reproduces a position exactly (what resume and rollback rely on).
  std::vector<std::int32_t> in(30), tg(30);
  BatchStream::read(*file, 3, 10, true, 9, 40, in.data(), tg.data());
  prefetched.seek(40);
  const Batch again = prefetched.next();
  EXPECT_TRUE(std::equal(in.begin(), in.end(), again.inputs));
  EXPECT_EQ(prefetched.position(), 41u);
}

TEST(BatchStream, SplitsEveryGlobalBatchAcrossRanksWithoutOverlapAndReshufflesPerEpoch) {
  // 200 sequences of 10: each one's first token ((10 j) mod 251) names it.
  TempDir dir;
  const std::string path = write_tokens(dir.path, 2001);
  TokenFile file(path, 256);
  const long B = 3, T = 10;
  const int ranks = 4;
  const std::uint64_t per_epoch = 200 / (B * ranks);  // 16 global batches of 12; 8 sequences left out each epoch
  auto first_tokens = [&](std::uint64_t position, long b, int rank, int of) {
    std::vector<std::int32_t> in(b * T), tg(b * T);
    BatchStream::read(file, b, T, true, 5, position, in.data(), tg.data(), rank, of);
    std::vector<std::int32_t> out;
    for (long i = 0; i < b; ++i) out.push_back(in[i * T]);
    return out;
  };
  for (const std::uint64_t position : std::vector<std::uint64_t>{0, 7, per_epoch, per_epoch + 3}) {
    // The ranks' parts, in rank order, are the batch one process with a batch of ranks x B reads.
    std::vector<std::int32_t> joined;
    for (int r = 0; r < ranks; ++r) {
      const auto part = first_tokens(position, B, r, ranks);
      joined.insert(joined.end(), part.begin(), part.end());
    }
    EXPECT_EQ(joined, first_tokens(position, B * ranks, 0, 1)) << "position " << position;
    EXPECT_EQ(std::set<std::int32_t>(joined.begin(), joined.end()).size(), joined.size())
        << "a sequence read twice at position " << position;
  }
  // The next epoch is another order, reached from the position alone (nothing like set_epoch to call).
  EXPECT_NE(first_tokens(0, B, 2, ranks), first_tokens(per_epoch, B, 2, ranks));
  // A stream of one rank's part yields exactly what read() says for that rank.
  HostAllocator alloc;
  BatchStream stream(alloc, std::make_shared<const TokenFile>(path, 256), B, T, true, 5, 2, 1, ranks);
  EXPECT_EQ(stream.batches_per_epoch(), per_epoch);
  for (std::uint64_t p = 0; p < 3; ++p) {
    const Batch b = stream.next();
    EXPECT_EQ(std::vector<std::int32_t>({b.inputs[0], b.inputs[T], b.inputs[2 * T]}), first_tokens(p, B, 1, ranks));
  }
}

TEST(TokenFile, ReportsACorruptedFileByPath) {
  TempDir dir;
  const std::string path = write_tokens(dir.path, 500);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(300);
    f.put('\x7f');
  }
  try {
    TokenFile bad(path, 256);
    FAIL() << "a corrupted token file was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": checksum mismatch"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, RoundTripsModelAndOptimizerStateAndTheTrainerState) {
  TempDir dir;
  test::FastModel a(test::small_shape()), b(test::small_shape(), 0, {}, 99);
  for (int u = 0; u < a.state->unit_count(); ++u) {
    const LocalShard s = a.state->local(u);
    for (std::size_t i = 0; i < s.count; ++i) s.m[i] = 0.5f * i, s.v[i] = 0.25f * i;
  }
  const SavedCheckpoint saved = save_checkpoint(dir.path.string(), 7, {{"step", 7}, {"note", "x"}}, a.layout, *a.state);
  EXPECT_EQ(verify_checkpoint(saved.path), "");
  const nlohmann::json trainer = load_checkpoint(saved.path, b.layout, *b.state);
  EXPECT_EQ(trainer["note"], "x");
  for (int u = 0; u < a.state->unit_count(); ++u) {
    const LocalShard x = a.state->local(u), y = b.state->local(u);
    EXPECT_EQ(0, std::memcmp(x.params, y.params, x.count * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(x.m, y.m, x.count * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(x.v, y.v, x.count * sizeof(float)));
  }
  EXPECT_EQ(list_checkpoints(dir.path.string()).front().first, 7);
}

TEST(Checkpoint, DetectsDamageAndRefusesToLoadIt) {
  TempDir dir;
  test::FastModel a(test::small_shape());
  const SavedCheckpoint saved = save_checkpoint(dir.path.string(), 1, {{"step", 1}}, a.layout, *a.state);
  const std::string file = (fs::path(saved.path) / "rank-00000.bin").string();
  const auto size = fs::file_size(file);
  fs::resize_file(file, size - 1);
  EXPECT_NE(verify_checkpoint(saved.path).find(file + ": "), std::string::npos);
  EXPECT_NE(verify_checkpoint(saved.path).find("truncated"), std::string::npos);
  const float first = a.state->params(0)[0];
  a.state->params(0)[0] = 123.0f;
  EXPECT_THROW(load_checkpoint(saved.path, a.layout, *a.state), std::runtime_error);
  EXPECT_EQ(a.state->params(0)[0], 123.0f) << "a damaged checkpoint was partly loaded";
  (void)first;
  // A model of another shape is refused by name.
  const SavedCheckpoint other = save_checkpoint(dir.path.string(), 2, {{"step", 2}}, a.layout, *a.state);
  test::FastModel wider(test::small_shape(11, 16));
  try {
    load_checkpoint(other.path, wider.layout, *wider.state);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not match the model's embedding"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, KeepsTheLastNAndRemovesUnfinishedWrites) {
  TempDir dir;
  test::FastModel a(test::small_shape());
  for (long s = 1; s <= 4; ++s) save_checkpoint(dir.path.string(), s, {{"step", s}}, a.layout, *a.state);
  fs::create_directories(dir.path / ".tmp-step-00000005-1");
  prune_checkpoints(dir.path.string(), 2);
  const auto left = list_checkpoints(dir.path.string());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].first, 4);
  EXPECT_EQ(left[1].first, 3);
  EXPECT_FALSE(fs::exists(dir.path / ".tmp-step-00000005-1"));
}

}  // namespace
}  // namespace fsdp
