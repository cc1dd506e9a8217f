// Token files are not trusted (issue 19, item 1): ids at or beyond the model's vocabulary, headers
// whose fields lie or overflow, files that are not regular files, and 10,000 mutants of a good
// file are all refused with the file's name — never read or written out of bounds, never a hang.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <limits>
#include <stdexcept>

#include "data/batch_stream.h"
#include "file_fixtures.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;
using test::TempFolder;
using test::TokenFileFields;

std::vector<std::uint16_t> counting(std::size_t n, std::uint16_t mod = 200) {
  std::vector<std::uint16_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::uint16_t>(i % mod);
  return t;
}

/** What opening the file threw, or "" when it opened. */
std::string open_error(const std::string& path, std::uint32_t model_vocab) {
  try {
    TokenFile f(path, model_vocab);
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

TEST(TokenFile, RefusesIdsAtOrBeyondTheHeadersVocabularyNamingFileTokenAndId) {
  TempFolder dir;
  auto tokens = counting(500);
  tokens[321] = 300;  // the header says 256, as the file the issue reports did (ids 256/300/1000)
  const std::string path = (dir.path / "ids.tok").string();
  test::write_bytes(path, test::token_file_bytes(tokens));
  const std::string e = open_error(path, 256);
  EXPECT_EQ(e.rfind(path + ": token 321 is id 300, not below the vocabulary size 256 (the file's header)", 0), 0u) << e;
}

TEST(TokenFile, RefusesIdsBeyondTheModelsVocabularyEvenWhenTheHeaderAllowsThem) {
  TempFolder dir;
  auto tokens = counting(500);
  tokens[7] = 65535;  // the id that crashed embedding_forward
  const std::string path = (dir.path / "wide.tok").string();
  test::write_bytes(path, test::token_file_bytes(tokens, {1, 1, 65536}));
  const std::string e = open_error(path, 256);
  EXPECT_EQ(e.rfind(path + ": token 7 is id 65535, not below the vocabulary size 256 (model.vocab_size)", 0), 0u) << e;
  EXPECT_EQ(open_error(path, 65536), "");
}

TEST(TokenFile, RefusesAVocabularyOfZeroAndHeaderFieldsThatOverflow) {
  TempFolder dir;
  const auto tokens = counting(100);
  const std::string path = (dir.path / "h.tok").string();
  test::write_bytes(path, test::token_file_bytes(tokens, {1, 1, 0}));
  EXPECT_EQ(open_error(path, 256), path + ": the header's vocabulary size is 0 (no token id can be valid)");
  test::write_bytes(path, test::token_file_bytes(tokens, {1, 1, 70000}));
  EXPECT_EQ(open_error(path, 256).rfind(path + ": the header's vocabulary size 70000 exceeds", 0), 0u);
  // 64 + 2 x count wraps around 2^64 to exactly this file's size: the count is 2^63 + 100.
  TokenFileFields wraps;
  wraps.count = (std::uint64_t{1} << 63) + tokens.size(), wraps.count_set = true;
  test::write_bytes(path, test::token_file_bytes(tokens, wraps));
  std::string e = open_error(path, 256);
  EXPECT_EQ(e.rfind(path + ": 264 bytes, expected more than any file can hold for the 9223372036854775908 tokens", 0),
            0u)
      << e;
  try {
    read_token_file_header(path);
    FAIL() << "the header of a count near 2^63 was accepted";
  } catch (const std::runtime_error& err) {
    EXPECT_EQ(std::string(err.what()).rfind(path + ": 264 bytes", 0), 0u) << err.what();
  }
  wraps.count = std::numeric_limits<std::uint64_t>::max();
  test::write_bytes(path, test::token_file_bytes(tokens, wraps));
  EXPECT_NE(open_error(path, 256).find("more than any file can hold"), std::string::npos);
}

TEST(TokenFile, RefusesAFifoAFolderAndADeviceWithoutBlocking) {
  TempFolder dir;
  const std::string fifo = (dir.path / "train.tok").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opened for reading, a FIFO waits for a writer: run the checks apart and give them 10 s.
  auto header = std::async(std::launch::async, [&] {
    try {
      read_token_file_header(fifo);
      return std::string("accepted");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
  });
  if (header.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the blocked open return
    ::close(unblock);
    header.wait();
    FAIL() << "reading the header of a FIFO blocked";
  }
  EXPECT_EQ(header.get(), fifo + ": is a FIFO, not a regular file");
  EXPECT_EQ(open_error(fifo, 256), fifo + ": is a FIFO, not a regular file");
  EXPECT_EQ(open_error(dir.path.string(), 256), dir.path.string() + ": is a folder, not a regular file");
  EXPECT_EQ(open_error("/dev/zero", 256), "/dev/zero: is a device, not a regular file");
}

/** Writes `id` at token `at` of the file in place, then gives it back its modification time (so only the ids can tell).
 */
void plant_keeping_mtime(const std::string& path, std::uint64_t at, std::uint16_t id) {
  const auto mtime = fs::last_write_time(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(64 + 2 * at));
    f.write(reinterpret_cast<const char*>(&id), 2);
  }
  fs::last_write_time(path, mtime);
}

TEST(BatchStream, ChecksEveryIdAsItBuildsABatchAndReportsItFromThePrefetchThread) {
  // The file is good when opened, then changed by a writer that even restores its modification
  // time: batches are still checked as they are built.
  TempFolder dir;
  const auto tokens = counting(1001);
  const std::string path = (dir.path / "changing.tok").string();
  test::write_bytes(path, test::token_file_bytes(tokens));
  auto file = std::make_shared<const TokenFile>(path, 256);
  HostAllocator alloc;
  BatchStream direct(alloc, file, 4, 10, false, 1, 0), prefetched(alloc, file, 4, 10, false, 1, 2);
  direct.next(), prefetched.next();     // batch 0: sequences 0-3, tokens 0-40
  plant_keeping_mtime(path, 95, 1000);  // token 95: sequence 9, in batch 2 (tokens 80-120)
  std::vector<std::int32_t> in(40), tg(40);
  BatchStream::read(*file, 4, 10, false, 1, 1, in.data(), tg.data());  // batch 1 is untouched
  const std::string expected = path + ": token 95 is id 1000, not below the vocabulary size 256";
  for (BatchStream* s : {&direct, &prefetched}) {
    s->seek(2);
    try {
      s->next();
      FAIL() << "a batch holding id 1000 was built";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
    }
  }
  // The target of the last position is checked too (token T of a sequence is only a target).
  std::vector<std::uint16_t> last = counting(41);
  last[40] = 256;
  test::write_bytes(path, test::token_file_bytes(counting(41)));
  auto good = std::make_shared<const TokenFile>(path, 256);
  plant_keeping_mtime(path, 40, last[40]);
  EXPECT_THROW(BatchStream::read(*good, 4, 10, false, 1, 0, in.data(), tg.data()), std::runtime_error);
}

TEST(TokenFile, AFileRewrittenInPlaceUnderARunIsAnErrorNamingItNotASignal) {
  // Issue 26, item 3: samples/prepare-data.ts rewrote token files in place (truncate, write); a
  // mapped file then raised SIGBUS on the next page the trainer touched.
  TempFolder dir;
  const std::string path = (dir.path / "train.tok").string();
  test::write_bytes(path, test::token_file_bytes(counting(100'001)));
  auto file = std::make_shared<const TokenFile>(path, 256);
  HostAllocator alloc;
  BatchStream stream(alloc, file, 4, 100, true, 1, 2);
  stream.next();
  ::truncate(path.c_str(), 64 + 2 * 10);  // the writer's first act: truncate (then it writes)
  const std::string expected =
      path + ": changed while the run was reading it (200066 bytes when the run opened it, 84 now)";
  try {
    for (int i = 0; i < 10; ++i) stream.next();
    FAIL() << "batches were read from a truncated file";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
  }
  // The same size, new content (the writer's second act): its modification time tells.
  test::write_bytes(path, test::token_file_bytes(counting(100'001)));
  auto reopened = std::make_shared<const TokenFile>(path, 256);
  const auto opened_at = fs::last_write_time(path);
  test::write_bytes(path, test::token_file_bytes(counting(100'001, 100)));
  // A rewrite within the file system's timestamp granularity would keep the time: set a later one
  // as a slower writer's would be, rather than sleeping and hoping the clock ticks.
  fs::last_write_time(path, opened_at + std::chrono::seconds(1));
  std::vector<std::int32_t> in(400), tg(400);
  try {
    BatchStream::read(*reopened, 4, 100, true, 1, 0, in.data(), tg.data());
    FAIL() << "a batch was read from a file rewritten since it was opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": changed while the run was reading it (modified "), std::string::npos)
        << e.what();
  }
  // Replaced by rename, as writers now do: the run keeps reading the file it opened.
  test::write_bytes(path, test::token_file_bytes(counting(100'001)));
  auto renamed = std::make_shared<const TokenFile>(path, 256);
  test::write_bytes(path + ".tmp", test::token_file_bytes(counting(7)));
  fs::rename(path + ".tmp", path);
  BatchStream::read(*renamed, 4, 100, true, 1, 3, in.data(), tg.data());
  EXPECT_EQ(tg[0], in[1]);
}

TEST(TokenFile, AFileCutShortInsideItsHeaderIsReportedTruncatedNotBadMagic) {
  TempFolder dir;
  const std::string path = (dir.path / "short.tok").string();
  test::write_bytes(path, test::token_file_bytes(counting(100)).substr(0, 40));
  EXPECT_EQ(open_error(path, 256), path + ": 40 bytes, shorter than the 64-byte header of a token file (truncated)");
  EXPECT_THROW(read_token_file_header(path), std::runtime_error);
  test::write_bytes(path, std::string(40, 'x'));
  EXPECT_EQ(open_error(path, 256), path + ": not a token file (bad magic)");
}

/** A token file of 32-bit ids (dtype 2), as `fsdp-train prepare` writes one for a vocabulary past 65,536. */
std::string wide_token_file_bytes(const std::vector<std::uint32_t>& tokens, std::uint32_t vocab) {
  std::vector<std::uint16_t> halves(2 * tokens.size());  // the same bytes, little-endian on the machines we build for
  std::memcpy(halves.data(), tokens.data(), 4 * tokens.size());
  return test::token_file_bytes(halves, {1, 2, vocab, tokens.size(), true});
}

TEST(TokenFile, ThirtyTwoBitIdsPastSixtyFiveThousandReachTheBatchAndAreCheckedLikeSixteenBitOnes) {
  TempFolder dir;
  std::vector<std::uint32_t> tokens(41);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::uint32_t>(65530 + 1000 * i);
  const std::string path = (dir.path / "llama3.tok").string();
  test::write_bytes(path, wide_token_file_bytes(tokens, 128256));  // Llama 3's vocabulary
  TokenFile file(path, 128256);
  EXPECT_EQ(file.size(), 41u);
  std::vector<std::int32_t> in(40), tg(40);
  BatchStream::read(file, 1, 40, false, 1, 0, in.data(), tg.data());
  for (std::size_t t = 0; t < 40; ++t) {
    EXPECT_EQ(in[t], static_cast<std::int32_t>(tokens[t])) << t;
    EXPECT_EQ(tg[t], static_cast<std::int32_t>(tokens[t + 1])) << t;
  }
  // A model with a smaller vocabulary refuses the file by the first id it cannot embed.
  const std::string e = open_error(path, 70000);
  EXPECT_EQ(e.rfind(path + ": token 5 is id 70530, not below the vocabulary size 70000 (model.vocab_size)", 0), 0u)
      << e;
  // 16-bit ids cannot say a vocabulary past 65,536; the size check uses the dtype's width.
  const std::string narrow = (dir.path / "narrow.tok").string();
  test::write_bytes(narrow, test::token_file_bytes(counting(10), {1, 1, 70000}));
  EXPECT_NE(open_error(narrow, 128256).find("exceeds what uint16 tokens hold (65536)"), std::string::npos);
  std::string cut = wide_token_file_bytes(tokens, 128256);
  cut.resize(cut.size() - 2);
  test::write_bytes(narrow, cut);
  EXPECT_NE(open_error(narrow, 128256).find("expected 228 for the 41 tokens"), std::string::npos)
      << open_error(narrow, 128256);
}

TEST(TokenFileFuzz, TenThousandMutantsAreReadOrRefusedByNameNeverOutOfBounds) {
  TempFolder dir(true);
  const auto tokens = counting(160, 250);
  const std::string good = test::token_file_bytes(tokens);
  const std::string path = (dir.path / "mutant.tok").string();
  const std::uint64_t interesting[] = {
      0,    1, 2, 255, 256, 65535, 65536, 70000, 0xffffffffu, 1ull << 32, 1ull << 62, 1ull << 63, (1ull << 63) + 80,
      ~0ull};
  test::FuzzRng rng{19};
  int opened = 0, refused = 0;
  std::vector<std::int32_t> in(2 * 8), tg(2 * 8);
  for (int k = 0; k < 10000; ++k) {
    std::string m = good;
    for (int edits = 1 + static_cast<int>(rng.below(3)); edits > 0; --edits) {
      switch (rng.below(5)) {
        case 0:
          if (!m.empty()) m[rng.below(m.size())] ^= static_cast<char>(1 + rng.below(255));
          break;
        case 1: {  // a header field (version, dtype, count, vocab) set to an edge value
          const std::uint64_t v = interesting[rng.below(std::size(interesting))];
          const std::size_t at[] = {8, 12, 16, 24};
          const std::size_t where = at[rng.below(4)];
          std::memcpy(m.data() + where, &v, where == 16 ? 8 : 4);
          break;
        }
        case 2:
          m.resize(rng.below(m.size() + 1));
          break;
        case 3:
          m.append(1 + rng.below(9), static_cast<char>(rng.below(256)));
          break;
        default:
          if (m.size() >= 66) {
            const std::uint16_t id = static_cast<std::uint16_t>(rng.below(2) ? rng.below(65536) : 250 + rng.below(20));
            std::memcpy(m.data() + 64 + 2 * rng.below((m.size() - 64) / 2), &id, 2);
          }
      }
    }
    if (rng.below(2) && m.size() >= 64) {  // a right checksum, so that what lies beyond it is tested
      const auto crc = static_cast<std::uint32_t>(
          crc32(0, reinterpret_cast<const Bytef*>(m.data() + 64), static_cast<uInt>(m.size() - 64)));
      std::memcpy(m.data() + 28, &crc, 4);
    }
    test::write_bytes(path, m);
    const std::uint32_t model_vocab = rng.below(2) ? 256 : 251;
    try {
      (void)read_token_file_header(path);
      TokenFile f(path, model_vocab);
      ASSERT_LE(f.id_limit(), model_vocab);
      ASSERT_EQ(64 + 2 * f.size(), m.size());
      const std::uint64_t sequences = f.size() > 0 ? (f.size() - 1) / 8 : 0;
      for (std::uint64_t p = 0; p < sequences / 2; ++p) {
        BatchStream::read(f, 2, 8, true, 3, p, in.data(), tg.data());
        for (int i = 0; i < 16; ++i)
          ASSERT_TRUE(in[i] >= 0 && in[i] < static_cast<std::int32_t>(model_vocab) &&
                      tg[i] < static_cast<std::int32_t>(model_vocab))
              << "mutant " << k;
      }
      ++opened;
    } catch (const std::runtime_error& e) {
      ASSERT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << "mutant " << k << ": " << e.what();
      ++refused;
    }
  }
  EXPECT_GT(opened, 100);
  EXPECT_GT(refused, 5000);
}

}  // namespace
}  // namespace fsdp
