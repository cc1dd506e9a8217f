#include "checkpoint/hf_decoder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "checkpoint/safetensors.h"
#include "parallel/replicated_state.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

// Hugging Face's index of a sharded model is a few hundred KB for a 70B model.
constexpr std::uint64_t kMaxIndexBytes = 64ull << 20;

std::string shape_text(const std::vector<std::int64_t>& s) {
  return nlohmann::json(s).dump();
}

/** Buffers older transformers saved with the weights: recomputed from rope_theta, never read. */
bool is_rotary_buffer(const std::string& name) {
  const std::string suffix = ".rotary_emb.inv_freq";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/** The folder's tensors: one file, or the shards its index names, each opened once. */
class HfWeights {
 public:
  explicit HfWeights(const fs::path& dir) {
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    std::error_code ec;
    if (fs::exists(fs::symlink_status(single, ec))) {
      files_.push_back(std::make_unique<SafetensorsFile>(single.string()));
      for (const auto& [name, t] : files_.back()->tensors()) where_[name] = files_.back().get();
      return;
    }
    if (!fs::exists(fs::symlink_status(index, ec)))
      throw std::runtime_error(dir.string() + ": holds neither model.safetensors nor model.safetensors.index.json");
    const nlohmann::json map = read_index(index.string());
    std::map<std::string, SafetensorsFile*> by_file;
    for (const auto& [name, file] : map.items()) {
      const std::string shard = file.get<std::string>();
      SafetensorsFile*& open = by_file[shard];
      if (!open) {
        files_.push_back(std::make_unique<SafetensorsFile>((dir / shard).string()));
        open = files_.back().get();
      }
      if (!open->has(name))
        throw std::runtime_error(index.string() + ": weight_map puts " + name + " in " + shard +
                                 ", which holds no such tensor");
      where_[name] = open;
    }
    // A shard's tensor the index does not name would be silently dropped: it is refused below as the model's own.
    for (const auto& f : files_)
      for (const auto& [name, t] : f->tensors())
        if (!where_.count(name)) where_[name] = f.get();
  }

  const std::map<std::string, SafetensorsFile*>& names() const { return where_; }

  /** The tensor's values, its stored shape checked against `shape`. */
  std::vector<float> floats(const std::string& name, const std::vector<std::int64_t>& shape) const {
    const auto it = where_.find(name);
    if (it == where_.end()) throw std::runtime_error(missing_where() + ": holds no tensor " + name);
    const StoredTensor& t = it->second->tensors().at(name);
    if (t.shape != shape)
      throw std::runtime_error(it->second->path() + ": tensor " + name + " has shape " + shape_text(t.shape) +
                               ", the run config's model needs " + shape_text(shape));
    return it->second->floats(name);
  }

 private:
  static nlohmann::json read_index(const std::string& path) {
    const ReadOnlyFile file(path, /*follow_links=*/false);
    if (file.size() > kMaxIndexBytes)
      throw std::runtime_error(path + ": " + std::to_string(file.size()) + " bytes, too large for a shard index");
    std::string text(file.size(), '\0');
    file.read_at(0, text.data(), text.size());
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path + ": not JSON: " + e.what());
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw std::runtime_error(path + ": weight_map is missing or not an object");
    for (const auto& [name, file] : index["weight_map"].items()) {
      // A shard is a file of this folder: a path elsewhere (../, /, a subfolder) is not the model's.
      if (!file.is_string() || file.get<std::string>().empty() ||
          file.get<std::string>().find('/') != std::string::npos || file.get<std::string>() == ".." ||
          file.get<std::string>() == ".")
        throw std::runtime_error(path + ": weight_map." + name + " is " + file.dump() +
                                 ", not the name of a file in the folder");
    }
    return index["weight_map"];
  }

  std::string missing_where() const {
    return files_.size() == 1 ? files_[0]->path() : fs::path(files_[0]->path()).parent_path().string();
  }

  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, SafetensorsFile*> where_;
};

void check_family(const ModelShape& s) {
  if (!s.llama_family())
    throw std::runtime_error("the Hugging Face decoder weights are llama's and qwen3's, not gpt2's");
}

}  // namespace

std::vector<HfDecoderTensor> hf_decoder_tensors(const ModelShape& s) {
  check_family(s);
  const std::int64_t V = s.V, C = s.C, H = s.H, KV = s.KV, D = s.D, F = s.F;
  std::vector<HfDecoderTensor> out;
  out.push_back({"embedding.wte", {V, C}, {"model.embed_tokens.weight"}, {V}});
  for (long long i = 0; i < s.L; ++i) {
    const std::string ours = "blocks." + std::to_string(i) + ".";
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    const std::string at = hf + "self_attn.", mlp = hf + "mlp.";
    out.push_back({ours + "ln1.weight", {C}, {hf + "input_layernorm.weight"}, {C}});
    out.push_back({ours + "attn.qkv.weight",
                   {(H + 2 * KV) * D, C},
                   {at + "q_proj.weight", at + "k_proj.weight", at + "v_proj.weight"},
                   {H * D, KV * D, KV * D}});
    if (s.attention_bias)
      out.push_back({ours + "attn.qkv.bias",
                     {(H + 2 * KV) * D},
                     {at + "q_proj.bias", at + "k_proj.bias", at + "v_proj.bias"},
                     {H * D, KV * D, KV * D}});
    if (s.qk_norm()) {
      out.push_back({ours + "attn.q_norm.weight", {D}, {at + "q_norm.weight"}, {D}});
      out.push_back({ours + "attn.k_norm.weight", {D}, {at + "k_norm.weight"}, {D}});
    }
    out.push_back({ours + "attn.proj.weight", {C, H * D}, {at + "o_proj.weight"}, {C}});
    if (s.attention_bias) out.push_back({ours + "attn.proj.bias", {C}, {at + "o_proj.bias"}, {C}});
    out.push_back({ours + "ln2.weight", {C}, {hf + "post_attention_layernorm.weight"}, {C}});
    out.push_back(
        {ours + "mlp.gate_up.weight", {2 * F, C}, {mlp + "gate_proj.weight", mlp + "up_proj.weight"}, {F, F}});
    if (s.mlp_bias)
      out.push_back({ours + "mlp.gate_up.bias", {2 * F}, {mlp + "gate_proj.bias", mlp + "up_proj.bias"}, {F, F}});
    out.push_back({ours + "mlp.down.weight", {C, F}, {mlp + "down_proj.weight"}, {C}});
    if (s.mlp_bias) out.push_back({ours + "mlp.down.bias", {C}, {mlp + "down_proj.bias"}, {C}});
  }
  out.push_back({"final_ln.weight", {C}, {"model.norm.weight"}, {C}});
  if (!s.tied) out.push_back({"lm_head.weight", {V, C}, {"lm_head.weight"}, {V}});
  return out;
}

DecoderTensors read_hf_decoder(const std::string& hf_dir, const ModelShape& shape) {
  const std::vector<HfDecoderTensor> specs = hf_decoder_tensors(shape);
  const HfWeights weights{fs::path(hf_dir)};
  std::set<std::string> expected;
  for (const HfDecoderTensor& t : specs) expected.insert(t.hf_names.begin(), t.hf_names.end());
  for (const auto& [name, file] : weights.names()) {
    if (expected.count(name) || is_rotary_buffer(name)) continue;
    if (shape.tied && name == "lm_head.weight") continue;  // held equal to the embedding below
    throw std::runtime_error(file->path() + ": tensor " + name + " is not a parameter of the run config's " +
                             (shape.qk_norm() ? "qwen3" : "llama") + " model (" + std::to_string(shape.L) + " layers" +
                             (shape.tied ? ", tied head" : "") + (shape.attention_bias ? ", attention biases" : "") +
                             (shape.mlp_bias ? ", MLP biases" : "") + ")");
  }
  DecoderTensors out;
  for (const HfDecoderTensor& t : specs) {
    std::vector<float>& values = out[t.name];
    for (std::size_t k = 0; k < t.hf_names.size(); ++k) {
      std::vector<std::int64_t> hf_shape = t.shape;
      hf_shape[0] = t.hf_rows[k];
      const std::vector<float> part = weights.floats(t.hf_names[k], hf_shape);
      values.insert(values.end(), part.begin(), part.end());
    }
  }
  if (shape.tied && weights.names().count("lm_head.weight")) {
    // Some tied checkpoints store the head's weight too; it must be the embedding, or the model is untied.
    const std::vector<float> head = weights.floats("lm_head.weight", {shape.V, shape.C});
    if (std::memcmp(head.data(), out.at("embedding.wte").data(), head.size() * sizeof(float)) != 0)
      throw std::runtime_error(weights.names().at("lm_head.weight")->path() +
                               ": lm_head.weight differs from model.embed_tokens.weight, but the run config's "
                               "model ties them (model.tie_embeddings: true)");
  }
  return out;
}

void write_hf_decoder(const std::string& out_dir, const ModelShape& shape, const DecoderTensors& tensors) {
  const std::vector<HfDecoderTensor> specs = hf_decoder_tensors(shape);
  std::vector<TensorToWrite> parts;
  for (const HfDecoderTensor& t : specs) {
    const auto it = tensors.find(t.name);
    std::int64_t numel = 1;
    for (std::int64_t d : t.shape) numel *= d;
    if (it == tensors.end() || static_cast<std::int64_t>(it->second.size()) != numel)
      throw std::runtime_error(
          "the Hugging Face export of " + out_dir + " needs parameter " + t.name + " of shape " + shape_text(t.shape) +
          (it == tensors.end() ? ", which is missing" : ", given " + std::to_string(it->second.size()) + " values"));
    const std::int64_t cols = numel / t.shape[0];
    std::int64_t row = 0;
    for (std::size_t k = 0; k < t.hf_names.size(); ++k) {
      std::vector<std::int64_t> hf_shape = t.shape;
      hf_shape[0] = t.hf_rows[k];
      parts.push_back({t.hf_names[k], hf_shape, it->second.data() + row * cols});
      row += t.hf_rows[k];
    }
  }
  fs::create_directories(out_dir);
  write_safetensors((fs::path(out_dir) / "model.safetensors").string(), parts, {{"format", "pt"}});
}

nlohmann::json hf_decoder_config(const ModelConfig& m) {
  const bool qwen3 = m.architecture == Architecture::qwen3;
  if (!m.llama_family()) throw std::runtime_error("a gpt2 model is exported as GPT2LMHeadModel, not a decoder folder");
  // Qwen3's MLP has no biases in transformers: a model with them would load without them.
  if (qwen3 && m.mlp_bias) throw std::runtime_error("Qwen3ForCausalLM has no MLP biases (model.mlp_bias is true)");
  const ModelShape s = ModelShape::of(m);
  nlohmann::json rope_scaling = nullptr;
  if (m.rope_scaling.rope_type == "llama3")
    rope_scaling = {{"rope_type", "llama3"},
                    {"factor", m.rope_scaling.factor},
                    {"low_freq_factor", m.rope_scaling.low_freq_factor},
                    {"high_freq_factor", m.rope_scaling.high_freq_factor},
                    {"original_max_position_embeddings", m.rope_scaling.original_max_position_embeddings}};
  nlohmann::json c = {
      {"architectures", {qwen3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", qwen3 ? "qwen3" : "llama"},
      {"vocab_size", m.vocab_size},
      {"hidden_size", m.d_model},
      {"intermediate_size", s.F},
      {"num_hidden_layers", m.n_layers},
      {"num_attention_heads", m.n_heads},
      {"num_key_value_heads", s.KV},
      {"head_dim", s.D},
      {"max_position_embeddings", m.max_seq_len},
      {"hidden_act", "silu"},
      {"rms_norm_eps", m.rms_norm_eps},
      {"rope_theta", m.rope_theta},
      {"rope_scaling", rope_scaling},
      {"attention_bias", m.attention_bias},
      {"attention_dropout", 0.0},
      {"initializer_range", m.init_std},
      {"tie_word_embeddings", m.tie_embeddings},
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"dtype", "float32"},
  };
  if (qwen3) {
    c["use_sliding_window"] = false;
    c["sliding_window"] = nullptr;
  } else {
    c["mlp_bias"] = m.mlp_bias;
  }
  return c;
}

void export_hf_decoder(const std::string& checkpoint, const ModelConfig& model, const std::string& out_dir) {
  const nlohmann::json config = hf_decoder_config(model);
  const ParamLayout layout = ParamLayout::of(ModelShape::of(model));
  const std::unique_ptr<Backend> be = make_backend("cpu");
  ReplicatedState whole(*be, layout);
  // Checks the manifest, every file and that the units are this model's, then puts the ranges together.
  load_checkpoint(checkpoint, layout, whole);
  DecoderTensors tensors;
  for (std::size_t u = 0; u < layout.units.size(); ++u)
    for (const ParamSegment& seg : layout.units[u].segments) {
      const float* src = whole.params(static_cast<int>(u)) + seg.offset;
      tensors[seg.name].assign(src, src + seg.numel);
    }
  write_hf_decoder(out_dir, layout.shape, tensors);
  write_file_atomically((fs::path(out_dir) / "config.json").string(), config.dump(2) + "\n");
}

SavedCheckpoint import_hf_decoder(const std::string& hf_dir, const ModelConfig& model,
                                  const nlohmann::json& trainer_state, const std::string& checkpoint_dir) {
  const ParamLayout layout = ParamLayout::of(ModelShape::of(model));
  const DecoderTensors tensors = read_hf_decoder(hf_dir, layout.shape);
  const std::unique_ptr<Backend> be = make_backend("cpu");
  ReplicatedState whole(*be, layout);
  for (std::size_t u = 0; u < layout.units.size(); ++u)
    for (const ParamSegment& seg : layout.units[u].segments) {
      const std::vector<float>& values = tensors.at(seg.name);
      std::copy(values.begin(), values.end(), whole.params(static_cast<int>(u)) + seg.offset);
    }
  return save_checkpoint(checkpoint_dir, 0, trainer_state, layout, whole);
}

}  // namespace fsdp
