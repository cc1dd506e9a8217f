#include "checkpoint/hf_gpt2.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "backend/backend.h"
#include "checkpoint/safetensors.h"
#include "model/param_layout.h"
#include "parallel/replicated_state.h"
#include "runtime/files.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

/** One native parameter as a GPT-2 tensor: where it is, its GPT-2 name and shape, and whether it is transposed there.
 */
struct Mapped {
  int unit = 0;
  const ParamSegment* segment = nullptr;
  std::string name;                 // GPT-2's, with the "transformer." prefix save_pretrained writes
  std::vector<std::int64_t> shape;  // GPT-2's
  bool transposed = false;          // native (out, in) = shape reversed
};

std::vector<Mapped> gpt2_tensors(const ParamLayout& layout) {
  const std::int64_t V = layout.shape.V, C = layout.shape.C, F = layout.shape.F, S = layout.shape.S;
  // Native block parameter → GPT-2 name, GPT-2 shape, transposed (Conv1D stores (in, out)).
  const struct {
    const char* native;
    const char* gpt2;
    std::vector<std::int64_t> shape;
    bool transposed;
  } block[] = {
      {"ln1.weight", "ln_1.weight", {C}, false},
      {"ln1.bias", "ln_1.bias", {C}, false},
      {"attn.qkv.weight", "attn.c_attn.weight", {C, 3 * C}, true},
      {"attn.qkv.bias", "attn.c_attn.bias", {3 * C}, false},
      {"attn.proj.weight", "attn.c_proj.weight", {C, C}, true},
      {"attn.proj.bias", "attn.c_proj.bias", {C}, false},
      {"ln2.weight", "ln_2.weight", {C}, false},
      {"ln2.bias", "ln_2.bias", {C}, false},
      {"mlp.fc.weight", "mlp.c_fc.weight", {C, F}, true},
      {"mlp.fc.bias", "mlp.c_fc.bias", {F}, false},
      {"mlp.fc2.weight", "mlp.c_proj.weight", {F, C}, true},
      {"mlp.fc2.bias", "mlp.c_proj.bias", {C}, false},
  };
  std::vector<Mapped> out;
  const UnitLayout& emb = layout.units[layout.embedding_unit()];
  out.push_back({layout.embedding_unit(), &emb.segment("embedding.wte"), "transformer.wte.weight", {V, C}, false});
  out.push_back({layout.embedding_unit(), &emb.segment("embedding.wpe"), "transformer.wpe.weight", {S, C}, false});
  for (long long i = 0; i < layout.shape.L; ++i) {
    const int u = layout.block_unit(static_cast<int>(i));
    for (const auto& b : block)
      out.push_back({u, &layout.units[u].segment(b.native), "transformer.h." + std::to_string(i) + "." + b.gpt2,
                     b.shape, b.transposed});
  }
  const int head = layout.head_unit();
  out.push_back({head, &layout.units[head].segment("final_ln.weight"), "transformer.ln_f.weight", {C}, false});
  out.push_back({head, &layout.units[head].segment("final_ln.bias"), "transformer.ln_f.bias", {C}, false});
  if (!layout.shape.tied)
    out.push_back({head, &layout.units[head].segment("lm_head.weight"), "lm_head.weight", {V, C}, false});
  return out;
}

/** dst (cols x rows) = src (rows x cols) transposed. */
void transpose(const float* src, std::int64_t rows, std::int64_t cols, float* dst) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  return nlohmann::json(s).dump();
}

nlohmann::json read_json_file(const std::string& path) {
  const ReadOnlyFile file(path, /*follow_links=*/false);
  if (file.size() > (16u << 20))
    throw std::runtime_error(path + ": " + std::to_string(file.size()) + " bytes, too large for a model config");
  std::string text(file.size(), '\0');
  file.read_at(0, text.data(), text.size());
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
}

}  // namespace

nlohmann::json hf_gpt2_config(const ModelConfig& m) {
  // GPT-2's end-of-text id where the vocabulary has it (the gpt2 tokenizer's), none otherwise: transformers
  // warns of special ids outside the vocabulary.
  const nlohmann::json end_of_text = m.vocab_size > 50256 ? nlohmann::json(50256) : nlohmann::json(nullptr);
  return {
      {"bos_token_id", end_of_text},
      {"eos_token_id", end_of_text},
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", m.vocab_size},
      {"n_positions", m.max_seq_len},
      {"n_embd", m.d_model},
      {"n_layer", m.n_layers},
      {"n_head", m.n_heads},
      {"n_inner", static_cast<long long>(m.mlp_ratio) * m.d_model},
      {"activation_function", "gelu_new"},
      {"layer_norm_epsilon", 1e-5},
      {"resid_pdrop", m.dropout},
      {"embd_pdrop", m.dropout},
      {"attn_pdrop", m.dropout},
      {"initializer_range", m.init_std},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", m.tie_embeddings},
      {"dtype", "float32"},
  };
}

std::vector<std::string> hf_gpt2_differences(const nlohmann::json& hf, const ModelConfig& m) {
  std::vector<std::string> out;
  if (!hf.is_object()) return {"is not a JSON object"};
  // A key the file leaves out takes transformers' GPT2Config default, as transformers reads it.
  const auto value = [&](const char* key, const nlohmann::json& fallback) {
    return hf.contains(key) && !hf[key].is_null() ? hf[key] : fallback;
  };
  const auto model_type = value("model_type", nullptr);
  if (model_type != "gpt2")
    out.push_back("model_type is " + model_type.dump() + ", not \"gpt2\" (only GPT-2 folders are read)");
  const struct {
    const char* hf_key;
    long long fallback;
    const char* native_key;
    long long native;
  } sizes[] = {
      {"vocab_size", 50257, "model.vocab_size", m.vocab_size},
      {"n_positions", 1024, "model.max_seq_len", m.max_seq_len},
      {"n_embd", 768, "model.d_model", m.d_model},
      {"n_layer", 12, "model.n_layers", m.n_layers},
      {"n_head", 12, "model.n_heads", m.n_heads},
  };
  long long n_embd = m.d_model;
  for (const auto& s : sizes) {
    const auto v = value(s.hf_key, s.fallback);
    if (!v.is_number_integer()) {
      out.push_back(std::string(s.hf_key) + " is " + v.dump() + ", not a whole number");
      continue;
    }
    if (std::string(s.hf_key) == "n_embd") n_embd = v.get<long long>();
    if (v.get<long long>() != s.native)
      out.push_back(std::string(s.hf_key) + " is " + v.dump() + ", the run config's " + s.native_key + " " +
                    std::to_string(s.native));
  }
  const auto inner = value("n_inner", 4 * n_embd);
  const long long F = static_cast<long long>(m.mlp_ratio) * m.d_model;
  if (!inner.is_number_integer())
    out.push_back("n_inner is " + inner.dump() + ", not a whole number");
  else if (inner.get<long long>() != F)
    out.push_back("n_inner is " + inner.dump() + ", the run config's model.mlp_ratio x model.d_model " +
                  std::to_string(F));
  const auto tied = value("tie_word_embeddings", true);
  if (!tied.is_boolean() || tied.get<bool>() != m.tie_embeddings)
    out.push_back("tie_word_embeddings is " + tied.dump() + ", the run config's model.tie_embeddings " +
                  (m.tie_embeddings ? "true" : "false"));
  const auto act = value("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    out.push_back("activation_function is " + act.dump() +
                  "; the runtime computes GELU's tanh approximation (\"gelu_new\")");
  const auto eps = value("layer_norm_epsilon", 1e-5);
  if (!eps.is_number() || std::fabs(eps.get<double>() - 1e-5) > 1e-12)
    out.push_back("layer_norm_epsilon is " + eps.dump() + "; the runtime's LayerNorm uses 1e-5");
  if (value("scale_attn_weights", true) != true)
    out.push_back("scale_attn_weights is not true; the runtime scales attention scores by 1/sqrt(head size)");
  if (value("scale_attn_by_inverse_layer_idx", false) != false)
    out.push_back("scale_attn_by_inverse_layer_idx is true; the runtime does not scale by layer");
  if (value("add_cross_attention", false) != false)
    out.push_back("add_cross_attention is true; the runtime's GPT has no cross-attention");
  return out;
}

void export_hf_gpt2(const std::string& checkpoint, const ModelConfig& model, const std::string& out_dir) {
  const ParamLayout layout = ParamLayout::of(ModelShape::of(model));
  const std::unique_ptr<Backend> be = make_backend("cpu");
  ReplicatedState whole(*be, layout);
  // Checks the manifest, every file and that the units are this model's, then puts the ranges together.
  load_checkpoint(checkpoint, layout, whole);

  const std::vector<Mapped> mapped = gpt2_tensors(layout);
  std::vector<std::vector<float>> transposed;
  transposed.reserve(mapped.size());
  std::vector<TensorToWrite> tensors;
  for (const Mapped& t : mapped) {
    const float* src = whole.params(t.unit) + t.segment->offset;
    if (t.transposed) {
      transposed.emplace_back(t.segment->numel);
      transpose(src, t.shape[1], t.shape[0], transposed.back().data());
      src = transposed.back().data();
    }
    tensors.push_back({t.name, t.shape, src});
  }
  fs::create_directories(out_dir);
  write_safetensors((fs::path(out_dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
  write_file_atomically((fs::path(out_dir) / "config.json").string(), hf_gpt2_config(model).dump(2) + "\n");
}

SavedCheckpoint import_hf_gpt2(const std::string& hf_dir, const ModelConfig& model, const nlohmann::json& trainer_state,
                               const std::string& checkpoint_dir) {
  const std::string config_path = (fs::path(hf_dir) / "config.json").string();
  const std::vector<std::string> differences = hf_gpt2_differences(read_json_file(config_path), model);
  if (!differences.empty()) {
    std::ostringstream msg;
    msg << config_path << " is not the run config's model:";
    for (const auto& d : differences) msg << "\n  " << d;
    throw std::runtime_error(msg.str());
  }
  const SafetensorsFile file((fs::path(hf_dir) / "model.safetensors").string());
  const ParamLayout layout = ParamLayout::of(ModelShape::of(model));
  const std::vector<Mapped> mapped = gpt2_tensors(layout);

  // Names as save_pretrained writes them ("transformer.h.0…") or as the original GPT-2 files do ("h.0…").
  const bool prefixed = file.has("transformer.wte.weight");
  const auto stored_name = [&](const std::string& name) {
    return prefixed || name.rfind("transformer.", 0) != 0 ? name : name.substr(std::string("transformer.").size());
  };
  std::set<std::string> used;
  for (const Mapped& t : mapped) {
    const std::string name = stored_name(t.name);
    if (!file.has(name))
      throw std::runtime_error(file.path() + ": holds no tensor " + name + " (" + t.segment->name +
                               " of the run config's model)");
    const StoredTensor& s = file.tensors().at(name);
    if (s.shape != t.shape)
      throw std::runtime_error(file.path() + ": tensor " + name + " has shape " + shape_text(s.shape) +
                               ", the run config's model needs " + shape_text(t.shape));
    used.insert(name);
  }
  // Anything else would be dropped silently; only GPT-2's attention-mask buffers and a tied head's copy are expected.
  for (const auto& [name, t] : file.tensors()) {
    if (used.count(name)) continue;
    const auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".attn.bias") || ends_with(".attn.masked_bias") || (model.tie_embeddings && name == "lm_head.weight"))
      continue;
    throw std::runtime_error(file.path() + ": tensor " + name + " is not part of a GPT-2 model the runtime reads");
  }

  const std::unique_ptr<Backend> be = make_backend("cpu");
  ReplicatedState whole(*be, layout);
  for (const Mapped& t : mapped) {
    const std::vector<float> values = file.floats(stored_name(t.name));
    float* dst = whole.params(t.unit) + t.segment->offset;
    if (t.transposed)
      transpose(values.data(), t.shape[0], t.shape[1], dst);
    else
      std::copy(values.begin(), values.end(), dst);
  }
  return save_checkpoint(checkpoint_dir, 0, trainer_state, layout, whole);
}

}  // namespace fsdp
