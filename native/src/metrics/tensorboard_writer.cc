#include "metrics/tensorboard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "runtime/files.h"

namespace fsdp {

namespace {

// Protocol buffer wire format, the few field kinds an Event needs (wire types 0, 1, 2, 5).
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void key(std::string& out, int field, int wire) {
  varint(out, (static_cast<uint64_t>(field) << 3) | wire);
}

void fixed(std::string& out, const void* p, std::size_t n) {
  // Little-endian hosts only (x86-64, aarch64), as the rest of the runtime's binary files.
  out.append(static_cast<const char*>(p), n);
}

void bytes_field(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

// Event fields (tensorflow/core/util/event.proto) and Summary.Value fields (summary.proto).
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr int kSummaryValue = 1, kValueTag = 1, kValueSimpleValue = 2;

std::string event_head(double wall_time, long step) {
  std::string e;
  key(e, kEventWallTime, 1);
  fixed(e, &wall_time, 8);
  if (step != 0) {
    key(e, kEventStep, 0);
    varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

const uint32_t* crc_table() {
  static uint32_t table[256];
  static bool made = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)made;
  return table;
}

/** The native metrics under the editor's tag names (core/runs/scalar-tags.ts NATIVE_TAGS). */
const std::pair<const char*, const char*> kStepTags[] = {
    {"loss", "train/loss"},           {"lr", "train/lr"},
    {"grad_norm", "train/grad_norm"}, {"tokens_per_s", "train/tokens_per_s"},
    {"step_ms", "train/step_ms"},     {"mfu", "train/mfu"}};

std::string host_name_for_file() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h(buf);
  for (char& c : h)
    if (c == '/' || c == ' ') c = '_';
  return h.empty() ? "host" : h;
}

}  // namespace

uint32_t crc32c(const uint8_t* data, std::size_t n) {
  const uint32_t* t = crc_table();
  uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) c = t[(c ^ data[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t masked_crc32c(const uint8_t* data, std::size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  const double now = unix_time();
  path_ = (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<long long>(now)) + "." +
                                         host_name_for_file() + "." + std::to_string(::getpid()) + ".0"))
              .string();
  fd_ = open_regular_for_writing(path_, O_WRONLY | O_CREAT | O_APPEND);
  std::string e = event_head(now, 0);
  bytes_field(e, kEventFileVersion, "brain.Event:2");
  record(e);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::scalars(long step, const std::vector<std::pair<std::string, double>>& values,
                                double wall_time) {
  if (values.empty()) return;
  std::string summary;
  for (const auto& [tag, v] : values) {
    std::string value;
    bytes_field(value, kValueTag, tag);
    const float f = static_cast<float>(v);
    key(value, kValueSimpleValue, 5);
    fixed(value, &f, 4);
    bytes_field(summary, kSummaryValue, value);
  }
  std::string e = event_head(wall_time, step);
  bytes_field(e, kEventSummary, summary);
  record(e);
}

void TensorBoardWriter::write_event(const nlohmann::json& event, double wall_time) {
  const std::string type = event.value("type", "");
  const auto number = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : std::nan(""); };
  if (type == "step") {
    // Whole-run step events, or rank 0's where the run writes per-rank ones (as the editor draws them).
    if (event.contains("rank") && event["rank"].is_number_integer() && event["rank"].get<int>() != 0) return;
    std::vector<std::pair<std::string, double>> values;
    for (const auto& [field, tag] : kStepTags)
      if (event.contains(field)) values.emplace_back(tag, number(event[field]));
    scalars(event.value("step", 0L), values, wall_time);
  } else if (type == "eval" && event.contains("val_loss")) {
    scalars(event.value("step", 0L), {{"eval/loss", number(event["val_loss"])}}, wall_time);
  }
}

void TensorBoardWriter::record(const std::string& data) {
  std::string r;
  r.reserve(data.size() + 16);
  const uint64_t n = data.size();
  fixed(r, &n, 8);
  const uint32_t len_crc = masked_crc32c(reinterpret_cast<const uint8_t*>(r.data()), 8);
  fixed(r, &len_crc, 4);
  r += data;
  const uint32_t data_crc = masked_crc32c(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  fixed(r, &data_crc, 4);
  std::size_t done = 0;
  while (done < r.size()) {
    const ssize_t w = ::write(fd_, r.data() + done, r.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error(path_ + ": cannot write: " + std::strerror(errno));
    done += static_cast<std::size_t>(w);
  }
}

}  // namespace fsdp
