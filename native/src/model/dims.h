// The sizes one micro-batch runs with.
#pragma once

namespace fsdp {

struct Dims {
  long B = 0, T = 0, C = 0, H = 0, F = 0, V = 0;
  long N() const { return B * T; }
};

}  // namespace fsdp
