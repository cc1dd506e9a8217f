#include "run_folder/run_folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "runtime/files.h"
#include "runtime/peer_watch.h"

namespace fsdp {

namespace {

/** The holder's line: "pid host unix-time". */
struct Holder {
  int pid = 0;
  std::string host;
  long since = 0;
};

Holder read_holder(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  Holder h;
  if (n > 0) {
    std::istringstream in(std::string(buf, static_cast<std::size_t>(n)));
    in >> h.pid >> h.host >> h.since;
  }
  return h;
}

void write_holder(int fd, int pid) {
  const std::string line =
      std::to_string(pid) + " " + host_name() + " " + std::to_string(static_cast<long>(unix_time())) + "\n";
  // Best effort: the lock is the flock, the text only names its holder in a refusal.
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size()))
    ::fsync(fd);
}

/**
 * The holder is the run's owner, the supervisor that started this trainer (FSDP_RUN_LOCK_OWNER, its
 * pid, on this host): it took the lock before starting anything of the attempt and holds it until
 * every process of it is gone (python/fsdp_studio/supervise.py), so this trainer runs under it.
 */
bool held_by_owner(const Holder& h) {
  const char* owner = std::getenv(kRunLockOwnerEnv);
  return owner && h.pid > 0 && std::to_string(h.pid) == owner && h.host == host_name();
}

std::string describe(const Holder& h) {
  if (h.pid <= 0) return "another process (it left no name in the lock file)";
  std::string when;
  if (h.since > 0) {
    char buf[64];
    const std::time_t t = static_cast<std::time_t>(h.since);
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
    when = " since " + std::string(buf);
  }
  return "pid " + std::to_string(h.pid) + " on host " + (h.host.empty() ? "?" : h.host) + when;
}

}  // namespace

std::string RunFolderLock::path_in(const std::string& dir) {
  return (std::filesystem::path(dir) / "run.lock").string();
}

bool lock_run_folder_fd(int fd, int holder_pid, std::string* holder) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    write_holder(fd, holder_pid);
    return true;
  }
  if (errno != EWOULDBLOCK)
    throw std::runtime_error(std::string("cannot lock the run folder: ") + std::strerror(errno));
  if (holder) *holder = describe(read_holder(fd));
  return false;
}

RunFolderLock::RunFolderLock(const std::string& dir) {
  const std::string path = path_in(dir);
  // A link or a FIFO named run.lock is refused by name (open_regular_for_writing), not locked through.
  const int fd = open_regular_for_writing(path, O_RDWR | O_CREAT);
  std::string holder;
  bool taken = false;
  try {
    taken = lock_run_folder_fd(fd, ::getpid(), &holder);
  } catch (const std::exception& e) {
    ::close(fd);
    throw std::runtime_error(path + ": " + e.what());
  }
  if (taken) {
    fd_ = fd;
    return;
  }
  const Holder h = read_holder(fd);
  ::close(fd);
  if (held_by_owner(h)) return;
  throw std::runtime_error(dir + " is in use by another trainer: " + holder + " holds " + path +
                           ". Two trainers on one run folder destroy each other's checkpoints: wait for it to end, "
                           "stop it, or use another run folder");
}

RunFolderLock::~RunFolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace fsdp
