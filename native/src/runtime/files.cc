#include "runtime/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fsdp {

namespace {

[[noreturn]] void fail(const std::string& path, const char* what) {
  const int err = errno;
  throw FileError(path + ": " + what + ": " + std::strerror(err), err);
}

/** Writes all of bytes to fd, then fsyncs; on failure closes fd, and throws naming `path`. */
void write_and_sync(int fd, const std::string& path, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      errno = err;
      fail(path, "write failed");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail(path, "fsync failed");
  }
  if (::close(fd) != 0) fail(path, "close failed");
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

/** The refusal of a file that is not a regular file: its name and what it is, never its bytes. */
[[noreturn]] void refuse_not_regular(const std::string& path, const char* kind) {
  throw FileError(path + ": is " + kind + ", not a regular file: not written", EINVAL);
}

}  // namespace

int open_regular_for_writing(const std::string& path, int flags, unsigned mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) {
    // ELOOP: the last component is a link; ENXIO: a FIFO nobody reads; lstat says which, by name.
    const int err = errno;
    struct stat st {};
    if ((err == ELOOP || err == ENXIO || err == EISDIR) && ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      refuse_not_regular(path, kind_of(st.st_mode));
    errno = err;
    fail(path, "cannot open for writing");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse_not_regular(path, kind_of(st.st_mode));
  }
  // Writes to a regular file never block; the flag is dropped so the writer sees ordinary writes.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

ReadOnlyFile::ReadOnlyFile(const std::string& path, bool follow_links) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_links ? 0 : O_NOFOLLOW));
  if (fd_ < 0) {
    if (!follow_links && errno == ELOOP) throw std::runtime_error(path + ": is a symbolic link, not a regular file");
    throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int e = errno;
    ::close(fd_);
    throw std::runtime_error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw std::runtime_error(path + ": is " + std::string(kind_of(st.st_mode)) + ", not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t ReadOnlyFile::read_some(std::uint64_t offset, void* dst, std::size_t n) const {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(path_ + ": read failed: " + std::strerror(errno));
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  return done;
}

void ReadOnlyFile::read_at(std::uint64_t offset, void* dst, std::size_t n) const {
  if (read_some(offset, dst, n) != n)
    throw std::runtime_error(path_ + ": ends before byte " + std::to_string(offset + n) + " (truncated)");
}

ReadOnlyFile::Stat ReadOnlyFile::stat() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw std::runtime_error(path_ + ": cannot stat: " + std::strerror(errno));
  return {static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

void sync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open to sync");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail(path, "fsync failed");
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = open_regular_for_writing(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  try {
    write_and_sync(fd, tmp, bytes);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail(path, "rename failed");
  } catch (...) {
    ::unlink(tmp.c_str());  // no run.json.tmp-PID left behind (a full disk)
    throw;
  }
  sync_path(std::filesystem::path(path).parent_path().string());
}

void write_file_in_place(const std::string& path, const std::string& bytes) {
  const int fd = open_regular_for_writing(path, O_WRONLY | O_CREAT | O_TRUNC);
  write_and_sync(fd, path, bytes);
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::uint64_t process_resident_bytes() {
  // statm: total and resident size in pages. One read of a tiny file per logged step.
  std::ifstream statm("/proc/self/statm");
  unsigned long long total = 0, resident = 0;
  if (!(statm >> total >> resident)) return 0;
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(page) : 0;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace fsdp
