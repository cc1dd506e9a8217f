// File writes that survive a crash at any moment: a temporary name, flushed, then renamed, so a
// reader sees the old file or the new one, never a partial one.
#pragma once
#include <chrono>
#include <string>

namespace fsdp {

/** Writes `bytes` to `path` atomically (temporary file in the same folder, fsync, rename, fsync of the folder). */
void write_file_atomically(const std::string& path, const std::string& bytes);

/** fsync of a file or folder by path; throws std::runtime_error naming the path. */
void sync_path(const std::string& path);

/** Seconds since the Unix epoch, with fractions. */
double unix_time();

/** Seconds elapsed since t0 on the monotonic clock. */
double seconds_since(std::chrono::steady_clock::time_point t0);

/** CPU seconds this process has used, all threads together: work done, whatever the machine's load. */
double process_cpu_seconds();

std::string host_name();

}  // namespace fsdp
