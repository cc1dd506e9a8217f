#include "runtime/peer_watch.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace fsdp {

bool process_alive(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // /proc/PID/stat: "pid (comm) state …"; the command may hold spaces and parentheses.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;  // no /proc: trust kill()
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

namespace {

/** The parent of a process, from /proc/PID/stat ("pid (comm) state ppid …"); 0 when unknown. */
int parent_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return 0;
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  int ppid = 0;
  char state = 0;
  std::istringstream rest(text.substr(close + 1));
  rest >> state >> ppid;
  return ppid;
}

}  // namespace

bool is_ancestor(int pid) {
  if (pid <= 1) return false;
  for (int p = parent_of(::getpid()); p > 1; p = parent_of(p))
    if (p == pid) return true;
  return false;
}

PeerWatch::PeerWatch(std::vector<WatchedProcess> watched, std::function<void(const WatchedProcess&)> on_gone,
                     double interval_s)
    : watched_(std::move(watched)), on_gone_(std::move(on_gone)), interval_s_(interval_s) {
  if (watched_.empty()) return;
  thread_ = std::thread([this] {
    const auto pause = std::chrono::duration<double>(interval_s_);
    while (!stop_.load()) {
      for (const auto& w : watched_) {
        if (stop_.load()) return;
        if (!process_alive(w.pid)) {
          on_gone_(w);
          return;
        }
      }
      std::this_thread::sleep_for(pause);
    }
  });
}

PeerWatch::~PeerWatch() {
  stop();
}

void PeerWatch::stop() {
  stop_.store(true);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace fsdp
