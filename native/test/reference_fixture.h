// Reads the PyTorch reference fixtures of test/fixtures/reference/ (made by
// test/reference/make_fixtures.py; format in test/fixtures/reference/README.md): a run config, the
// initial weights, a fixed batch, and what PyTorch computed over 10 optimizer steps in float64 and
// float32. Arrays are exact: little-endian floats in base64, each with a CRC-32 of its bytes.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "model/param_layout.h"

namespace fsdp::test {

inline constexpr const char* kReferenceFixtureFormat = "fsdp-studio/reference-fixture";
inline constexpr const char* kReferenceSchedulesFormat = "fsdp-studio/reference-schedules";
inline constexpr int kReferenceFixtureVersion = 1;

/** The folder of the committed fixtures (set by CMakeLists.txt). */
inline std::filesystem::path reference_fixture_dir() {
  return FSDP_REFERENCE_FIXTURES;
}

inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": not JSON: " + e.what());
  }
}

/** A fixture file's header, checked: the format it claims and the version this reader knows. */
inline nlohmann::json read_reference_file(const std::filesystem::path& path, const char* format) {
  nlohmann::json j = read_json_file(path);
  if (j.value("format", "") != format) throw std::runtime_error(path.string() + ": format is not " + format);
  if (j.value("version", 0) != kReferenceFixtureVersion)
    throw std::runtime_error(path.string() + ": version " + j.value("version", nlohmann::json()).dump() + " is not 1");
  return j;
}

inline std::vector<std::uint8_t> base64_decode(const std::string& text, const std::string& where) {
  auto value = [&](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    throw std::runtime_error(where + ": invalid base64 character");
  };
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<std::uint32_t>(value(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xff));
    }
  }
  return out;
}

/** An encoded array ({dtype, count, crc32, base64}) as doubles; throws naming `where` if it is damaged. */
inline std::vector<double> decode_array(const nlohmann::json& a, const std::string& where) {
  const std::string dtype = a.at("dtype");
  const std::size_t count = a.at("count"), width = dtype == "float64" ? 8 : dtype == "float32" ? 4 : 0;
  if (width == 0) throw std::runtime_error(where + ": dtype " + dtype + " is not float32 or float64");
  const std::vector<std::uint8_t> bytes = base64_decode(a.at("base64"), where);
  if (bytes.size() != count * width)
    throw std::runtime_error(where + ": " + std::to_string(bytes.size()) + " bytes for " + std::to_string(count) + " " +
                             dtype);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(bytes.size()));
  if (crc != a.at("crc32").get<std::uint32_t>()) throw std::runtime_error(where + ": CRC-32 mismatch (corrupted)");
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {  // the files are little-endian, as is every machine this builds on
    if (width == 8)
      std::memcpy(&out[i], bytes.data() + 8 * i, 8);
    else {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      out[i] = f;
    }
  }
  return out;
}

/** One model fixture, loaded and checked against the runtime's parameter layout. */
struct ReferenceFixture {
  std::string name;
  nlohmann::json doc;
  RunConfig config;
  ParamLayout layout;
  std::vector<std::size_t> unit_start;  // offset of each unit in the flat parameter vector
  std::vector<double> initial_params;   // float32 values
  long micro_batches = 0, B = 0, T = 0;
  std::vector<std::vector<std::int32_t>> inputs, targets;  // per micro-batch, B*T ids

  /** The run ("float64" or "float32"). */
  const nlohmann::json& run(const std::string& dtype) const { return doc.at("runs").at(dtype); }
  /** Elements of a flat vector that belong to unit u. */
  template <class R>
  std::vector<R> unit_slice(const std::vector<double>& flat, int u) const {
    return {flat.begin() + unit_start[u], flat.begin() + unit_start[u] + layout.units[u].numel};
  }
};

inline ReferenceFixture load_reference_fixture(const std::filesystem::path& path) {
  ReferenceFixture f;
  f.doc = read_reference_file(path, kReferenceFixtureFormat);
  f.name = f.doc.at("name");
  const std::string where = path.filename().string();
  ParsedConfig parsed = parse_run_config(f.doc.at("config"));
  if (!parsed.ok()) throw std::runtime_error(format_problem(where + " config", parsed.problems.front()));
  f.config = parsed.config;
  f.layout = ParamLayout::of(ModelShape::of(f.config.model));

  // The fixture lists PyTorch's named_parameters() in order; it must be the runtime's units end to end.
  const auto& params = f.doc.at("parameters");
  std::size_t i = 0, offset = 0;
  for (const auto& unit : f.layout.units) {
    f.unit_start.push_back(offset);
    for (const auto& seg : unit.segments) {
      if (i >= params.size()) throw std::runtime_error(where + ": PyTorch has no parameter " + seg.name);
      const auto& p = params[i++];
      if (p.at("name") != seg.name || p.at("numel") != seg.numel || p.at("offset") != offset + seg.offset)
        throw std::runtime_error(where + ": parameter " + std::to_string(i - 1) + " is " + p.dump() +
                                 ", the runtime has " + seg.name + " (" + std::to_string(seg.numel) + " at " +
                                 std::to_string(offset + seg.offset) + ")");
    }
    offset += unit.numel;
  }
  if (i != params.size())
    throw std::runtime_error(where + ": PyTorch has parameters the runtime lacks, from " +
                             params[i].at("name").get<std::string>());
  f.initial_params = decode_array(f.doc.at("initial_params"), where + " initial_params");
  if (f.initial_params.size() != offset)
    throw std::runtime_error(where + ": initial_params has " + std::to_string(f.initial_params.size()) +
                             " values for " + std::to_string(offset) + " parameters");

  const auto& batch = f.doc.at("batch");
  f.micro_batches = batch.at("micro_batches"), f.B = batch.at("B"), f.T = batch.at("T");
  auto read_ids = [&](const char* key) {
    std::vector<std::vector<std::int32_t>> out;
    for (const auto& micro : batch.at(key)) {
      std::vector<std::int32_t> ids;
      for (const auto& row : micro)
        for (const auto& id : row) ids.push_back(id.get<std::int32_t>());
      if (static_cast<long>(ids.size()) != f.B * f.T)
        throw std::runtime_error(where + ": batch." + key + " is not B x T per micro-batch");
      out.push_back(std::move(ids));
    }
    if (static_cast<long>(out.size()) != f.micro_batches)
      throw std::runtime_error(where + ": batch." + key + " is not micro_batches long");
    return out;
  };
  f.inputs = read_ids("inputs");
  f.targets = read_ids("targets");
  return f;
}

/** The model fixtures in the folder (every *.json but schedules.json), sorted. */
inline std::vector<std::filesystem::path> reference_fixture_files() {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(reference_fixture_dir())) return files;
  for (const auto& e : std::filesystem::directory_iterator(reference_fixture_dir()))
    if (e.path().extension() == ".json" && e.path().filename() != "schedules.json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace fsdp::test
