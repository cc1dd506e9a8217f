// File writes that survive a crash at any moment: a temporary name, flushed, then renamed, so a
// reader sees the old file or the new one, never a partial one.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace fsdp {

/**
 * A file opened for reading that is known to be a regular file: opening never blocks (a FIFO
 * named by a config or a checkpoint would wait for a writer forever) and devices, folders and
 * sockets are refused by name. `follow_links` false refuses a symbolic link too (files named
 * inside a checkpoint must be the folder's own). Closed when destroyed; errors name the path.
 */
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path, bool follow_links = true);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /** Reads up to n bytes at offset; fewer only at the end of the file. */
  std::size_t read_some(std::uint64_t offset, void* dst, std::size_t n) const;
  /** Reads exactly n bytes at offset, or throws naming the path. */
  void read_at(std::uint64_t offset, void* dst, std::size_t n) const;

  /** The file's size and modification time (nanoseconds since the epoch) now, by fstat. */
  struct Stat {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
  };
  Stat stat() const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/**
 * Opens a file for writing the way every writer of a run folder opens it: never through a symbolic
 * link (O_NOFOLLOW: a link planted in the folder would carry the run's bytes to a file outside it),
 * never blocking (a FIFO without a reader), and only when what it opened is a regular file (a
 * device, a FIFO, a folder or a socket is refused). `flags` says how (O_WRONLY or O_RDWR, with
 * O_APPEND, O_TRUNC, O_CREAT as the writer needs). Returns the descriptor, which the caller closes.
 * A refusal throws FileError naming the file and what it is instead, never what it holds.
 */
int open_regular_for_writing(const std::string& path, int flags, unsigned mode = 0644);

/** A file operation that failed: what, the path and the errno (ENOSPC: the disk is full). */
class FileError : public std::runtime_error {
 public:
  FileError(const std::string& what, int err) : std::runtime_error(what), err_(err) {}
  int err() const { return err_; }

 private:
  int err_;
};

/**
 * Writes `bytes` to `path` atomically (temporary file in the same folder, fsync, rename, fsync of
 * the folder). Throws FileError naming the path and the errno; the temporary file is removed.
 */
void write_file_atomically(const std::string& path, const std::string& bytes);

/**
 * Rewrites a small file where it is (truncate, write, fsync): for a full disk, where the temporary
 * copy of write_file_atomically finds no room but the blocks the old content frees suffice.
 */
void write_file_in_place(const std::string& path, const std::string& bytes);

/** fsync of a file or folder by path; throws std::runtime_error naming the path. */
void sync_path(const std::string& path);

/** Seconds since the Unix epoch, with fractions. */
double unix_time();

/** Seconds elapsed since t0 on the monotonic clock. */
double seconds_since(std::chrono::steady_clock::time_point t0);

/** CPU seconds this process has used, all threads together: work done, whatever the machine's load. */
double process_cpu_seconds();

/** Resident set size of this process now (Linux /proc/self/statm), in bytes; 0 where it cannot be read. */
std::uint64_t process_resident_bytes();

std::string host_name();

}  // namespace fsdp
