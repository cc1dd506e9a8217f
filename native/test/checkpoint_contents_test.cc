// Checkpoint contents are not trusted (issue 19, item 9): names in a manifest stay inside the
// checkpoint folder, only regular files are opened (a FIFO never blocks, a symbolic link is
// refused), every field is checked for type and range and against the others, and every error
// names the file. Ends with 10,000 mutants of a manifest.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <future>

#include "checkpoint/checkpoint.h"
#include "checkpoint/manifest.h"
#include "checkpoint/state_file.h"
#include "file_fixtures.h"
#include "fixtures.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void write_json(const fs::path& p, const json& j) {
  test::write_bytes(p, j.dump(2));
}

/** Rewrites a state file with its meta changed by `edit` (sections kept), and the manifest to match it. */
void rewrite_meta(const fs::path& dir, int rank, const std::function<void(json&)>& edit,
                  const std::string& raw_meta = "") {
  const fs::path file = dir / state_file_name(rank);
  std::vector<std::pair<std::string, std::string>> sections;
  {
    const StateFileReader r(file.string());
    json meta = json::parse(r.text("meta"));
    edit(meta);
    sections.emplace_back("meta", raw_meta.empty() ? meta.dump() : raw_meta);
    const json stored = json::parse(r.text("meta"));
    for (const auto& u : stored["units"])
      for (const char* suffix : kUnitSectionSuffixes)
        sections.emplace_back(u["name"].get<std::string>() + suffix, r.text(u["name"].get<std::string>() + suffix));
  }
  StateFileWriter w(file.string());
  for (const auto& [name, bytes] : sections) w.section(name, bytes.data(), bytes.size());
  const auto [bytes, crc] = w.finish();
  json m = read_json(dir / "manifest.json");
  for (auto& f : m["files"])
    if (f["rank"] == rank) f["bytes"] = bytes, f["crc32"] = crc;
  write_json(dir / "manifest.json", m);
}

struct Saved {
  test::TempFolder root;
  test::FastModel model{test::small_shape()};
  fs::path dir;
  explicit Saved(long step = 3, bool in_memory = false) : root(in_memory) {
    dir = save_checkpoint(root.path.string(), step, {{"step", step}}, model.layout, *model.state).path;
  }
  std::string manifest() const { return (dir / "manifest.json").string(); }
  /** What loading threw, or "" when it loaded. */
  std::string load_error() {
    try {
      load_checkpoint(dir.string(), model.layout, *model.state);
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  }
};

TEST(CheckpointContents, NamesOutsideTheFolderAreRefusedWithoutBeingOpened) {
  Saved c;
  const fs::path outside = c.root.path / "outside.bin";
  fs::copy_file(c.dir / "rank-00000.bin", outside);  // a valid file, so only the name can refuse it
  for (const std::string& name : std::vector<std::string>{"../outside.bin", "../../../outside.bin", outside.string(),
                                                          "/etc/shadow", "./rank-00000.bin", "rank-00000.bin/"}) {
    json m = read_json(c.manifest());
    m["files"][0]["name"] = name;
    write_json(c.manifest(), m);
    const std::string expected = c.manifest() + ": files[rank 0].name " + json(name).dump() +
                                 " is not rank-00000.bin (files named in a checkpoint must be its own)";
    EXPECT_EQ(verify_checkpoint(c.dir.string()), expected);
    EXPECT_EQ(c.load_error(), expected + "; not loaded");
  }
}

TEST(CheckpointContents, AFifoOrASymbolicLinkInPlaceOfAStateFileIsRefusedWithoutBlocking) {
  Saved c;
  const fs::path file = c.dir / "rank-00000.bin", kept = c.root.path / "kept.bin";
  fs::rename(file, kept);
  fs::create_symlink(kept, file);
  EXPECT_EQ(verify_checkpoint(c.dir.string()), file.string() + ": is a symbolic link, not a regular file");
  fs::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  auto verdict =
      std::async(std::launch::async, [&] { return std::make_pair(verify_checkpoint(c.dir.string()), c.load_error()); });
  if (verdict.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ::close(::open(file.c_str(), O_WRONLY | O_NONBLOCK));
    verdict.wait();
    FAIL() << "a FIFO named in a checkpoint blocked the reader";
  }
  const auto [verified, loaded] = verdict.get();
  EXPECT_EQ(verified, file.string() + ": is a FIFO, not a regular file");
  EXPECT_EQ(loaded, file.string() + ": is a FIFO, not a regular file; not loaded");
  // The manifest itself too.
  fs::remove(c.manifest());
  ASSERT_EQ(::mkfifo(c.manifest().c_str(), 0600), 0);
  EXPECT_EQ(verify_checkpoint(c.dir.string()), c.manifest() + ": is a FIFO, not a regular file");
}

TEST(CheckpointContents, StepsAndWorldSizesOutOfRangeOrDisagreeingAreRefusedByFileAndField) {
  Saved c;
  const json good = read_json(c.manifest());
  auto with = [&](const char* key, const json& value) {
    json m = good;
    m[key] = value;
    write_json(c.manifest(), m);
    return verify_checkpoint(c.dir.string());
  };
  EXPECT_EQ(with("step", -5), c.manifest() + ": step is -5, outside [0, 1000000000000]");
  EXPECT_EQ(with("step", 1000000000000000000LL),
            c.manifest() + ": step is 1000000000000000000, outside [0, 1000000000000]");
  EXPECT_EQ(with("step", "3"), c.manifest() + ": step is \"3\", not a whole number");
  EXPECT_EQ(with("step", 4), c.manifest() + ": step is 4 but the folder is step-00000003");
  EXPECT_EQ(with("world_size", 1000000000000LL), c.manifest() + ": world_size is 1000000000000, outside [1, 1048576]");
  EXPECT_EQ(with("world_size", 0), c.manifest() + ": world_size is 0, outside [1, 1048576]");
  json m = good;
  m["files"].push_back(m["files"][0]);
  m["world_size"] = 2;
  write_json(c.manifest(), m);
  EXPECT_EQ(verify_checkpoint(c.dir.string()), c.manifest() + ": lists rank 0 twice");
  m["files"][1]["rank"] = 1, m["files"][1]["name"] = "rank-00001.bin";
  write_json(c.manifest(), m);
  EXPECT_EQ(verify_checkpoint(c.dir.string()),
            (c.dir / "rank-00000.bin").string() + ": meta says world size 1, the manifest 2");
  write_json(c.manifest(), good);
  EXPECT_EQ(verify_checkpoint(c.dir.string()), "");

  // The manifest's step and the trainer state's step (in the checksummed state file) must agree.
  const fs::path file = c.dir / "rank-00000.bin";
  rewrite_meta(c.dir, 0, [](json& meta) { meta["trainer"]["step"] = 2; });
  EXPECT_EQ(verify_checkpoint(c.dir.string()),
            file.string() + ": trainer step 2 differs from the manifest's step 3 (" + c.manifest() + ")");
  rewrite_meta(c.dir, 0, [](json& meta) { meta["trainer"]["step"] = 3, meta["rank"] = 1; });
  EXPECT_EQ(verify_checkpoint(c.dir.string()), file.string() + ": meta says rank 1, the manifest lists it as rank 0");
  rewrite_meta(c.dir, 0, [](json& meta) { meta["rank"] = 0, meta["units"][0]["offset"] = 5; });
  EXPECT_EQ(verify_checkpoint(c.dir.string()).rfind(file.string() + ": unit embedding count is", 0), 0u)
      << verify_checkpoint(c.dir.string());
  rewrite_meta(c.dir, 0, [](json& meta) { meta["units"][0]["offset"] = 0, meta["units"][0]["count"] = 7; });
  EXPECT_EQ(verify_checkpoint(c.dir.string()).rfind(file.string() + ": section embedding/params holds", 0), 0u)
      << verify_checkpoint(c.dir.string());
}

TEST(CheckpointContents, BadMetadataJsonIsReportedWithThePath) {
  Saved c;
  const fs::path file = c.dir / "rank-00000.bin";
  rewrite_meta(
      c.dir, 0, [](json&) {}, "{\"rank\": 0, \"units\": [");
  const std::string e = verify_checkpoint(c.dir.string());
  EXPECT_EQ(e.rfind(file.string() + ": section meta is not valid JSON: [json.exception.parse_error", 0), 0u) << e;
  EXPECT_EQ(c.load_error().rfind(file.string() + ": section meta is not valid JSON", 0), 0u);
  test::write_bytes(c.manifest(), "{\"format\": \"fsdp-studio-checkpoint\", ");
  EXPECT_EQ(verify_checkpoint(c.dir.string()).rfind(c.manifest() + ": not valid JSON: [json.exception.parse_error", 0),
            0u);
}

TEST(CheckpointContents, OlderManifestsWithoutRankFieldsStillLoad) {
  Saved c;
  json m = read_json(c.manifest());
  m["files"][0].erase("rank");
  write_json(c.manifest(), m);
  EXPECT_EQ(c.load_error(), "");
}

TEST(CheckpointManifestFuzz, TenThousandMutantsAreLoadedOrRefusedByNameNeverACrashOrHang) {
  Saved c(3, true);
  const std::string good = read_json(c.manifest()).dump();
  const json edge[] = {json(nullptr),
                       json(-1),
                       json(0),
                       json(1),
                       json(2),
                       json(3),
                       json(4294967295LL),
                       json(1LL << 53),
                       json(~0ull),
                       json(-1e300),
                       json(1.5),
                       json("x"),
                       json(""),
                       json("rank-00000.bin"),
                       json("../rank-00000.bin"),
                       json("/dev/zero"),
                       json::array(),
                       json::object(),
                       json(true)};
  const char* keys[] = {"format", "version", "step", "world_size", "complete",
                        "files",  "name",    "rank", "bytes",      "crc32"};
  test::FuzzRng rng{9};
  int loaded = 0, refused = 0;
  const auto started = std::chrono::steady_clock::now();
  for (int k = 0; k < 10000; ++k) {
    std::string text;
    if (rng.below(4) == 0) {  // bytes: flipped, cut or doubled
      text = good;
      for (int e = 0; e < 1 + static_cast<int>(rng.below(3)); ++e) {
        const auto r = rng.below(3);
        if (r == 0 && !text.empty()) text[rng.below(text.size())] = static_cast<char>(rng.below(256));
        if (r == 1) text.resize(rng.below(text.size() + 1));
        if (r == 2) text.insert(rng.below(text.size() + 1), text.substr(0, rng.below(text.size() + 1)));
      }
    } else {  // structure: a key of the manifest or of its file entry set to an edge value, removed, or an entry added
      json m = json::parse(good);
      for (int e = 0; e < 1 + static_cast<int>(rng.below(3)); ++e) {
        const bool entry = rng.below(2) && m["files"].is_array() && !m["files"].empty() && m["files"][0].is_object();
        json& target = entry ? m["files"][0] : m;
        const char* key = keys[rng.below(std::size(keys))];
        const auto r = rng.below(6);
        if (r == 0)
          target.erase(key);
        else if (r == 1 && entry)
          m["files"].push_back(m["files"][0]);
        else
          target[key] = edge[rng.below(std::size(edge))];
      }
      text = m.dump();
    }
    test::write_bytes(c.manifest(), text);
    const std::string verified = verify_checkpoint(c.dir.string());
    const std::string error = c.load_error();
    if (error.empty()) {
      ASSERT_EQ(verified, "") << "mutant " << k << " loaded but did not verify: " << text;
      ++loaded;
    } else {
      ASSERT_EQ(error.rfind(c.dir.string() + "/", 0), 0u) << "mutant " << k << ": " << error << "\n" << text;
      ASSERT_NE(verified, "") << "mutant " << k << " verified but did not load: " << error;
      ++refused;
    }
  }
  EXPECT_GT(loaded, 50);
  EXPECT_GT(refused, 5000);
  // How long 10,000 mutants took is a figure (in the gtest report's properties), not a verdict: a
  // loaded machine makes any loop slow. A mutant that hangs the reader never ends this loop at all.
  RecordProperty(
      "mutants_ms",
      static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count()));
}

}  // namespace
}  // namespace fsdp
