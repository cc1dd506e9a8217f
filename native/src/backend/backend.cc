#include "backend/backend.h"

#include <stdexcept>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

std::unique_ptr<Backend> make_backend(const std::string& device) {
  if (device == "cpu") return std::make_unique<CpuBackend>();
  throw std::runtime_error("launch.device: " + device + ": this build of the runtime has no such backend");
}

}  // namespace fsdp
