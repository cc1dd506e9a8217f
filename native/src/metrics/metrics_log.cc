#include "metrics/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "runtime/files.h"

namespace fsdp {

namespace {
constexpr int kProtocolVersion = 1;

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("cannot write: ") + std::strerror(n < 0 ? errno : EIO));
    done += static_cast<std::size_t>(n);
  }
}
}  // namespace

nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

MetricsLog::MetricsLog(const std::string& path, bool echo_to_stdout, const std::string& label)
    : path_(path), label_(label.empty() ? path : label), echo_(echo_to_stdout) {
  if (path.empty()) return;
  // Not through a link, and only a regular file: a resume must not append to a file outside the folder.
  fd_ = open_regular_for_writing(path, O_RDWR | O_CREAT | O_APPEND);
  // A writer killed mid-line (a full disk, a torn write) leaves an unterminated last line; ending
  // it keeps this run's first event a line of its own. Readers report the torn line as a bad line;
  // truncating it instead would make tail -F (the SSH watch) read the whole file again.
  struct stat st {};
  char last = '\n';
  if (::fstat(fd_, &st) == 0 && st.st_size > 0 && ::pread(fd_, &last, 1, st.st_size - 1) == 1 && last != '\n') {
    try {
      write_all(fd_, "\n");
    } catch (const std::exception& e) {
      ::close(fd_);
      throw std::runtime_error(label_ + ": " + e.what());
    }
  }
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(nlohmann::json event) {
  nlohmann::json line = {{"v", kProtocolVersion}, {"type", event["type"]}, {"time", unix_time()}};
  for (auto& [k, v] : event.items()) {
    if (k == "type") continue;
    line[k] = v.is_number_float() && !std::isfinite(v.get<double>()) ? nlohmann::json(nullptr) : v;
  }
  const std::string text = line.dump() + "\n";
  if (fd_ >= 0) {
    try {
      write_all(fd_, text);
    } catch (const std::exception& e) {
      throw std::runtime_error(label_ + ": " + e.what());
    }
  }
  if (echo_) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
}

void MetricsLog::log(const std::string& level, const std::string& msg) {
  write({{"type", "log"}, {"level", level}, {"msg", msg}});
}

}  // namespace fsdp
