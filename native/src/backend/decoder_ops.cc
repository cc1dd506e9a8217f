// The decoder family's ops where a backend lacks them: each says so, naming the op and the backend,
// so a backend compiles before it implements them (the CUDA one, until issue 35 item 7) and a run
// that needs one stops at its first call with the reason rather than computing nothing.
#include <stdexcept>
#include <string>

#include "backend/backend.h"

namespace fsdp {

void Backend::missing_op(const char* op) const {
  throw std::runtime_error(std::string(op) + " is not on the " + name() + " backend yet (issue 35 item 7)");
}

void Backend::rmsnorm_forward(void*, float*, const void*, const void*, long, long, long, long, float) {
  missing_op("rmsnorm_forward");
}
void Backend::rmsnorm_backward(void*, bool, float*, const void*, const void*, const void*, const float*, long, long,
                               long, long) {
  missing_op("rmsnorm_backward");
}
void Backend::rope_forward(void*, const float*, long, long, long, long, long) {
  missing_op("rope_forward");
}
void Backend::rope_backward(void*, const float*, long, long, long, long, long) {
  missing_op("rope_backward");
}
void Backend::swiglu_forward(void*, const void*, long, long) {
  missing_op("swiglu_forward");
}
void Backend::swiglu_backward(void*, const void*, const void*, long, long) {
  missing_op("swiglu_backward");
}
std::size_t Backend::gqa_attention_state_size(long, long, long, long, long) const {
  missing_op("gqa_attention_state_size");
}
std::size_t Backend::gqa_attention_scratch_size(long, long, long, long, long) const {
  missing_op("gqa_attention_scratch_size");
}
void Backend::gqa_attention_forward(void*, float*, const void*, long, long, long, long, long, AttentionTap*) {
  missing_op("gqa_attention_forward");
}
void Backend::gqa_attention_state(float*, const void*, long, long, long, long, long) {
  missing_op("gqa_attention_state");
}
void Backend::gqa_attention_backward(void*, float*, const void*, const void*, const void*, const float*, long, long,
                                     long, long, long, AttentionTap*) {
  missing_op("gqa_attention_backward");
}

}  // namespace fsdp
