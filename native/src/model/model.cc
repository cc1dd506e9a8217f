#include "model/model.h"

#include "model/decoder.h"
#include "model/gpt.h"

namespace fsdp {

std::unique_ptr<Model> make_model(Backend& be, const ParamLayout& layout, UnitStorage& storage, const ModelConfig& m,
                                  ActivationPolicy policy) {
  if (layout.shape.llama_family())
    return std::make_unique<Decoder>(be, layout, storage, DecoderMath::of(m), std::move(policy));
  return std::make_unique<Gpt>(be, layout, storage, static_cast<float>(m.dropout), std::move(policy));
}

DeviceTokens::DeviceTokens(Backend& be, const Batch& batch) {
  const std::size_t n = static_cast<std::size_t>(batch.B * batch.T);
  if (be.host_memory()) {
    inputs_ = batch.inputs, targets_ = batch.targets;
    return;
  }
  // One buffer for inputs then targets, like a slot of the data loader's ring (MEMORY.md "other").
  ids_ = be.allocator().allocate(MemoryCategory::other, 2 * sizeof(std::int32_t) * n);
  be.upload(ids_.i32(), batch.inputs, sizeof(std::int32_t) * n);
  be.upload(ids_.i32() + n, batch.targets, sizeof(std::int32_t) * n);
  inputs_ = ids_.i32(), targets_ = ids_.i32() + n;
}

}  // namespace fsdp
