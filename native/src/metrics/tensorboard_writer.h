// TensorBoard event files next to metrics.jsonl, so that people who sync TensorBoard to W&B or read
// runs with their own tools see native runs too (logging.tensorboard, on by default). The one writer
// of the format in this project: runs/<run-id>/events.out.tfevents.<time>.<host>.<pid>.0, TFRecord
// framing (u64 length, masked CRC-32C of it, an Event protocol buffer, masked CRC-32C of it) around
// TensorFlow's Event { wall_time, step, file_version | summary { value { tag, simple_value } } }.
// The scalars carry the tag names the editor gives the native metrics (core/runs/scalar-tags.ts,
// NATIVE_TAGS): train/loss, train/lr, train/grad_norm, train/tokens_per_s, train/step_ms,
// train/mfu, eval/loss. Each record goes out in one write() on a file opened for appending.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsdp {

class TensorBoardWriter {
 public:
  /** Creates the event file in `dir` and writes its file_version record. */
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  const std::string& path() const { return path_; }

  /** One Event with these scalars at `step` (values as float32; NaN and Inf kept). */
  void scalars(long step, const std::vector<std::pair<std::string, double>>& values, double wall_time);

  /** The scalars of a metrics protocol event (whole-run or rank-0 step events, eval events); others are ignored. */
  void write_event(const nlohmann::json& event, double wall_time);

 private:
  void record(const std::string& data);

  std::string path_;
  int fd_ = -1;
};

/** CRC-32C (Castagnoli) and the masked form TFRecords store; exposed for tests. */
uint32_t crc32c(const uint8_t* data, std::size_t n);
uint32_t masked_crc32c(const uint8_t* data, std::size_t n);

}  // namespace fsdp
