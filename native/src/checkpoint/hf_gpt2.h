// Native checkpoints as Hugging Face GPT-2 model folders and back (native/FORMATS.md, "Hugging
// Face GPT-2 folders"). The runtime's GPT is GPT-2's architecture (pre-LN blocks, GELU with the tanh
// approximation, LayerNorm eps 1e-5, learned positions, a head tied to the embedding unless
// model.tie_embeddings is false), so a checkpoint is a GPT2LMHeadModel: config.json plus
// model.safetensors, the four matrices of each block transposed to GPT-2's Conv1D (in, out) layout.
// A checkpoint of any world size and strategy exports (its ranges are put together first); an
// import writes a step-0 checkpoint of the run config's model, which a run then resumes from on any
// number of ranks. The folder read by an import is not trusted: its config must describe the run
// config's model exactly (every difference is named), and the safetensors file is checked
// (checkpoint/safetensors.h) before anything is copied.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "config/run_config.h"

namespace fsdp {

/** The config.json of GPT2LMHeadModel for a run config's model. */
nlohmann::json hf_gpt2_config(const ModelConfig& model);

/**
 * What in a Hugging Face config.json differs from the run config's model (or from what the runtime
 * computes: the activation, LayerNorm's eps, attention scaling), one sentence each naming both
 * keys and values; empty when the folder's model is the run config's.
 */
std::vector<std::string> hf_gpt2_differences(const nlohmann::json& hf_config, const ModelConfig& model);

/**
 * Writes the checkpoint folder `checkpoint` (any world size) of a run with `model` as a Hugging
 * Face GPT-2 folder: out_dir/config.json and out_dir/model.safetensors (float32), each written
 * atomically. Throws std::runtime_error naming the file when the checkpoint is unusable or does
 * not hold that model.
 */
void export_hf_gpt2(const std::string& checkpoint, const ModelConfig& model, const std::string& out_dir);

/**
 * Reads the Hugging Face GPT-2 folder hf_dir (config.json, model.safetensors) and writes its
 * weights as the step-0 checkpoint of a run with `model` under checkpoint_dir (AdamW's moments
 * zero, `trainer_state` the state of a run that has not started). Throws std::runtime_error naming
 * the file and every difference when the folder does not hold that model.
 */
SavedCheckpoint import_hf_gpt2(const std::string& hf_dir, const ModelConfig& model, const nlohmann::json& trainer_state,
                               const std::string& checkpoint_dir);

}  // namespace fsdp
