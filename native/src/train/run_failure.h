// The words a failed run ends with (run_end's reason, run.json's end_reason): a full disk says so
// first ("disk full: …"), since that is what a person must fix, whatever write it interrupted.
#pragma once
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

#include "runtime/files.h"

namespace fsdp {

inline bool is_disk_full(const std::exception& e) {
  if (const auto* f = dynamic_cast<const FileError*>(&e)) return f->err() == ENOSPC || f->err() == EDQUOT;
  if (const auto* f = dynamic_cast<const std::filesystem::filesystem_error*>(&e))
    return f->code() == std::errc::no_space_on_device;
  // Errors that passed through a collective (first_failure) or another layer keep only the text.
  return std::string(e.what()).find(std::strerror(ENOSPC)) != std::string::npos;
}

inline std::string failure_reason(const std::exception& e) {
  return is_disk_full(e) ? std::string("disk full: ") + e.what() : e.what();
}

}  // namespace fsdp
