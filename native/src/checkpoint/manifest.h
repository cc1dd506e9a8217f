// A checkpoint's manifest.json (native/FORMATS.md): the completion marker, listing each state
// file with its rank, size and CRC. Read as untrusted input: every field is checked for type and
// range and against the others (a file per rank at most, rank 0's among them, ranks below the
// world size, a step that matches the folder's name), and the names it lists must be the names
// the writer gives (rank-NNNNN.bin), so nothing outside the checkpoint folder is ever opened.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsdp {

struct ListedFile {
  std::string name;  // rank-NNNNN.bin, inside the checkpoint folder
  int rank = 0;
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

struct CheckpointManifest {
  std::string path;  // the manifest file
  long step = 0;
  int world_size = 0;
  std::vector<ListedFile> files;  // in rank order
};

/** The folder name of a step's checkpoint: step-NNNNNNNN. */
std::string checkpoint_folder_name(long step);

/** The state file name of a rank: rank-NNNNN.bin. */
std::string state_file_name(int rank);

/** The manifest's text for a completed checkpoint. */
std::string manifest_text(long step, int world_size, const std::vector<ListedFile>& files);

/** Reads and checks dir/manifest.json; throws std::runtime_error naming it and the field. */
CheckpointManifest read_manifest(const std::string& dir);

/** Checks one listed file against the manifest (size, whole-file CRC) and its own header; throws naming it. */
void check_listed_file(const std::string& dir, const ListedFile& f);

}  // namespace fsdp
