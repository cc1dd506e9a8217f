// The decoder family's weights (llama, qwen3: /work/team/decoder-layout.md) as Hugging Face
// LlamaForCausalLM / MistralForCausalLM / Qwen3ForCausalLM safetensors and back. Hugging Face keeps
// q, k and v (and gate and up) as separate matrices; the runtime's layout stacks them by rows into
// attn.qkv (q heads, then k heads, then v heads) and mlp.gate_up (gate, then up), so a layout
// tensor is one or more Hugging Face tensors, in order, along their rows — nothing is transposed.
// A folder read is not trusted: model.safetensors, or the shards model.safetensors.index.json
// names (plain file names inside the folder), each checked by SafetensorsFile (tensors inside the
// file, F32 / BF16 / F16); every tensor the layout needs must be there with the shape the run
// config's model gives it, and a tensor that belongs to no layout parameter is refused by name
// (a model of another shape or family), except the rotary inverse frequencies old checkpoints
// kept and a tied model's copy of the embedding as lm_head.weight (held equal to it).
// The model keys themselves come from config.json through the run config (core/config/hf-model-folder.ts):
// this file reads only tensors.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "config/run_config.h"
#include "model/param_layout.h"

namespace fsdp {

/** A layout parameter by segment name ("embedding.wte", "blocks.3.attn.qkv.weight", "final_ln.weight"). */
using DecoderTensors = std::map<std::string, std::vector<float>>;

/** One layout parameter and the Hugging Face tensors that make it, stacked by rows in this order. */
struct HfDecoderTensor {
  std::string name;                   // the layout's segment name
  std::vector<std::int64_t> shape;    // the layout's [rows, cols] or [n]
  std::vector<std::string> hf_names;  // Hugging Face's names, in stacking order
  std::vector<std::int64_t> hf_rows;  // rows each contributes (its shape: [rows] + shape[1:])
};

/** Every parameter of a llama / qwen3 model and its Hugging Face tensors, in layout order. */
std::vector<HfDecoderTensor> hf_decoder_tensors(const ModelShape& shape);

/**
 * Reads the weights of the Hugging Face folder `hf_dir` for a model of `shape` (llama or qwen3) as
 * float32 by layout name. Throws std::runtime_error naming the file and the tensor when one is
 * missing, has another shape, is not a float dtype, lies outside its file, or is not the model's.
 */
DecoderTensors read_hf_decoder(const std::string& hf_dir, const ModelShape& shape);

/**
 * Writes `tensors` (every layout parameter of `shape`) as out_dir/model.safetensors in Hugging
 * Face's names, float32, atomically. Throws naming the parameter when one is missing or mis-sized.
 */
void write_hf_decoder(const std::string& out_dir, const ModelShape& shape, const DecoderTensors& tensors);

/**
 * The config.json of LlamaForCausalLM (llama) or Qwen3ForCausalLM (qwen3) for a run config's model,
 * rope_theta and rope_scaling written as transformers 4.x reads them (5.x reads them too).
 */
nlohmann::json hf_decoder_config(const ModelConfig& model);

/**
 * Writes the checkpoint folder `checkpoint` (any world size) of a run with `model` (llama, qwen3) as
 * a Hugging Face folder: out_dir/config.json and out_dir/model.safetensors (float32), each written
 * atomically. Throws std::runtime_error naming the file when the checkpoint does not hold that model.
 */
void export_hf_decoder(const std::string& checkpoint, const ModelConfig& model, const std::string& out_dir);

/**
 * Reads the weights of the Hugging Face folder hf_dir (read_hf_decoder) as the step-0 checkpoint of
 * a run with `model` under checkpoint_dir (AdamW's moments zero, `trainer_state` a run's that has
 * not started). The model keys are the run config's, which its from_hf read from the folder's
 * config.json: the tensors are held to them.
 */
SavedCheckpoint import_hf_decoder(const std::string& hf_dir, const ModelConfig& model,
                                  const nlohmann::json& trainer_state, const std::string& checkpoint_dir);

}  // namespace fsdp
