#include "config/run_config.h"

#include <filesystem>
#include <stdexcept>

#include "config/embedded_schema.h"

namespace fsdp {

using nlohmann::json;

int dtype_bytes(Dtype d) { return d == Dtype::float32 ? 4 : 2; }

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::float32: return "float32";
    case Dtype::bfloat16: return "bfloat16";
    case Dtype::float16: return "float16";
  }
  return "?";
}

const char* strategy_name(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::NO_SHARD: return "NO_SHARD";
    case ShardingStrategy::SHARD_OPTIMIZER: return "SHARD_OPTIMIZER";
    case ShardingStrategy::SHARD_GRAD_OP: return "SHARD_GRAD_OP";
    case ShardingStrategy::FULL_SHARD: return "FULL_SHARD";
    case ShardingStrategy::HYBRID_SHARD: return "HYBRID_SHARD";
  }
  return "?";
}

namespace {

const json& schema() {
  static const json s = json::parse(kRunConfigSchema);
  return s;
}

const json& deref(const json& node) {
  if (node.contains("$ref")) {
    const std::string ref = node["$ref"];
    const std::string prefix = "#/definitions/";
    return schema()["definitions"][ref.substr(prefix.size())];
  }
  return node;
}

// Fills the defaults of absent keys, and creates absent sections whose keys have defaults unless
// the section has required keys (debug.inject_nan: its absence means "off") or is marked
// x-absent-means-off (launch.slurm) — as
// core/config/run-config.ts applySchemaDefaults does.
void apply_defaults(const json& node, json& value) {
  const json& s = deref(node);
  if (!s.contains("properties") || !value.is_object()) return;
  for (const auto& [key, child] : s["properties"].items()) {
    const json& cs = deref(child);
    if (!value.contains(key)) {
      if (child.contains("default")) value[key] = child["default"];
      else if (cs.contains("default")) value[key] = cs["default"];
      else if (cs.contains("properties") && (!cs.contains("required") || cs["required"].empty()) && !cs.value("x-absent-means-off", false)) value[key] = json::object();
    }
    if (value.contains(key)) apply_defaults(child, value[key]);
  }
}

/** Reads typed values, recording a problem (and returning a default) when a key is missing or mistyped. */
class Reader {
 public:
  Reader(const json& root, std::vector<ConfigProblem>& problems) : root_(root), problems_(problems) {}

  const json* find(const std::string& path) const {
    const json* cur = &root_;
    std::size_t start = 0;
    while (start <= path.size()) {
      const std::size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!cur->is_object() || !cur->contains(key)) return nullptr;
      cur = &(*cur)[key];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return cur;
  }

  bool has(const std::string& path) const { return find(path) != nullptr; }

  long long integer(const std::string& path, long long min, long long fallback = 0) {
    const json* v = find(path);
    if (!v) return missing(path), fallback;
    if (!v->is_number_integer() && !(v->is_number_float() && v->get<double>() == static_cast<long long>(v->get<double>()))) {
      return wrong(path, "an integer", *v), fallback;
    }
    const long long x = v->is_number_integer() ? v->get<long long>() : static_cast<long long>(v->get<double>());
    if (x < min) return problems_.push_back({path, std::to_string(x) + " is below the minimum " + std::to_string(min)}), fallback;
    return x;
  }

  double number(const std::string& path, double fallback = 0) {
    const json* v = find(path);
    if (!v) return missing(path), fallback;
    if (!v->is_number()) return wrong(path, "a number", *v), fallback;
    return v->get<double>();
  }

  bool boolean(const std::string& path, bool fallback = false) {
    const json* v = find(path);
    if (!v) return missing(path), fallback;
    if (!v->is_boolean()) return wrong(path, "true or false", *v), fallback;
    return v->get<bool>();
  }

  std::string string(const std::string& path, const std::string& fallback = "") {
    const json* v = find(path);
    if (!v) return missing(path), fallback;
    if (!v->is_string()) return wrong(path, "a string", *v), fallback;
    return v->get<std::string>();
  }

  std::string one_of(const std::string& path, const std::vector<std::string>& allowed) {
    const std::string s = string(path, allowed.front());
    for (const auto& a : allowed)
      if (s == a) return s;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    problems_.push_back({path, "\"" + s + "\" is not one of " + list});
    return allowed.front();
  }

 private:
  void missing(const std::string& path) { problems_.push_back({path, "is missing"}); }
  void wrong(const std::string& path, const char* expected, const json& v) {
    problems_.push_back({path, std::string("expected ") + expected + ", got " + v.dump()});
  }

  const json& root_;
  std::vector<ConfigProblem>& problems_;
};

Dtype read_dtype(Reader& r, const std::string& path) {
  const std::string s = r.one_of(path, {"float32", "bfloat16", "float16"});
  return s == "bfloat16" ? Dtype::bfloat16 : s == "float16" ? Dtype::float16 : Dtype::float32;
}

std::string resolve_path(const std::string& base_dir, const std::string& p) {
  if (p.empty() || base_dir.empty()) return p;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

}  // namespace

ParsedConfig parse_run_config(const json& input, const std::string& base_dir) {
  ParsedConfig out;
  auto& problems = out.problems;
  if (!input.is_object()) {
    problems.push_back({"", "a run config must be an object with model, data and training sections"});
    return out;
  }
  json value = input;
  for (const char* section : {"model", "data", "training"}) {
    if (!value.contains(section)) problems.push_back({section, "is missing"});
  }
  if (!problems.empty()) return out;
  // zero_stage is DeepSpeed's alias of sharding_strategy; fold it before defaults fill the latter.
  if (value.contains("fsdp") && value["fsdp"].is_object() && value["fsdp"].contains("zero_stage")) {
    static const char* const stages[] = {"NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "FULL_SHARD"};
    const json& z = value["fsdp"]["zero_stage"];
    if (z.is_number_integer() && z.get<int>() >= 0 && z.get<int>() <= 3) {
      if (!value["fsdp"].contains("sharding_strategy")) value["fsdp"]["sharding_strategy"] = stages[z.get<int>()];
      else if (value["fsdp"]["sharding_strategy"] != stages[z.get<int>()])
        problems.push_back({"fsdp.zero_stage", "zero_stage " + z.dump() + " means " + stages[z.get<int>()] + ", but sharding_strategy is " + value["fsdp"]["sharding_strategy"].dump() + "; give one of them"});
    } else {
      problems.push_back({"fsdp.zero_stage", z.dump() + " is not one of 0, 1, 2, 3"});
    }
    value["fsdp"].erase("zero_stage");
  }
  apply_defaults(schema(), value);
  if (!value["data"].contains("seq_len") && value["model"].contains("max_seq_len")) value["data"]["seq_len"] = value["model"]["max_seq_len"];

  Reader r(value, problems);
  RunConfig& c = out.config;
  c.name = r.string("name", "run");

  auto& m = c.model;
  m.d_model = static_cast<int>(r.integer("model.d_model", 1, 1));
  m.n_layers = static_cast<int>(r.integer("model.n_layers", 1, 1));
  m.n_heads = static_cast<int>(r.integer("model.n_heads", 1, 1));
  m.vocab_size = static_cast<int>(r.integer("model.vocab_size", 2, 2));
  m.max_seq_len = static_cast<int>(r.integer("model.max_seq_len", 1, 1));
  m.mlp_ratio = static_cast<int>(r.integer("model.mlp_ratio", 1, 4));
  m.tie_embeddings = r.boolean("model.tie_embeddings", true);
  m.dropout = r.number("model.dropout");
  m.init_std = r.number("model.init_std", 0.02);

  auto& d = c.data;
  d.train = resolve_path(base_dir, r.string("data.train"));
  if (r.has("data.val")) d.val = resolve_path(base_dir, r.string("data.val"));
  d.seq_len = static_cast<int>(r.integer("data.seq_len", 1, 1));
  d.shuffle = r.boolean("data.shuffle", true);
  d.prefetch_batches = static_cast<int>(r.integer("data.prefetch_batches", 0, 2));

  auto& t = c.training;
  t.batch_size_per_gpu = static_cast<int>(r.integer("training.batch_size_per_gpu", 1, 1));
  t.gradient_accumulation_steps = static_cast<int>(r.integer("training.gradient_accumulation_steps", 1, 1));
  t.max_steps = static_cast<int>(r.integer("training.max_steps", 1, 1));
  t.learning_rate = r.number("training.learning_rate");
  t.schedule = r.one_of("training.schedule", {"warmup_cosine", "wsd", "one_cycle", "linear", "constant"});
  t.warmup_steps = static_cast<int>(r.integer("training.warmup_steps", 0));
  t.min_lr_ratio = r.number("training.min_lr_ratio", 0.1);
  t.decay_ratio = r.number("training.decay_ratio", 0.2);
  t.weight_decay = r.number("training.weight_decay", 0.1);
  if (const json* betas = r.find("training.betas"); betas && betas->is_array() && betas->size() == 2 && (*betas)[0].is_number() && (*betas)[1].is_number()) {
    t.beta1 = (*betas)[0].get<double>();
    t.beta2 = (*betas)[1].get<double>();
  } else {
    problems.push_back({"training.betas", "expected two numbers [beta1, beta2]"});
  }
  t.eps = r.number("training.eps", 1e-8);
  t.max_grad_norm = r.number("training.max_grad_norm", 1.0);
  t.layer_lr_decay = r.number("training.layer_lr_decay", 1.0);
  t.seed = static_cast<std::uint32_t>(r.integer("training.seed", 0, 1234));

  auto& f = c.fsdp;
  const std::string strategy = r.one_of("fsdp.sharding_strategy", {"FULL_SHARD", "NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "HYBRID_SHARD"});
  f.sharding_strategy = strategy == "NO_SHARD" ? ShardingStrategy::NO_SHARD
                        : strategy == "SHARD_OPTIMIZER" ? ShardingStrategy::SHARD_OPTIMIZER
                        : strategy == "SHARD_GRAD_OP" ? ShardingStrategy::SHARD_GRAD_OP
                        : strategy == "HYBRID_SHARD" ? ShardingStrategy::HYBRID_SHARD
                                                     : ShardingStrategy::FULL_SHARD;
  f.cpu_offload = r.boolean("fsdp.cpu_offload");
  f.backward_prefetch = r.one_of("fsdp.backward_prefetch", {"BACKWARD_PRE", "BACKWARD_POST", "NONE"});
  f.forward_prefetch = r.boolean("fsdp.forward_prefetch");
  if (r.has("fsdp.ranks_per_node")) f.ranks_per_node = static_cast<int>(r.integer("fsdp.ranks_per_node", 1, 1));

  auto& mp = c.mixed_precision;
  mp.param_dtype = read_dtype(r, "mixed_precision.param_dtype");
  mp.reduce_dtype = read_dtype(r, "mixed_precision.reduce_dtype");
  mp.buffer_dtype = read_dtype(r, "mixed_precision.buffer_dtype");

  auto& ac = c.activation_checkpointing;
  ac.enabled = r.boolean("activation_checkpointing.enabled");
  const std::string policy = r.one_of("activation_checkpointing.policy", {"every_n", "selective", "auto"});
  ac.policy = policy == "selective" ? CheckpointPolicy::selective : policy == "auto" ? CheckpointPolicy::automatic : CheckpointPolicy::every_n;
  ac.every_n_layers = static_cast<int>(r.integer("activation_checkpointing.every_n_layers", 1, 1));
  if (r.has("activation_checkpointing.memory_budget_gb")) ac.memory_budget_gb = r.number("activation_checkpointing.memory_budget_gb");

  auto& ck = c.checkpointing;
  ck.dir = r.string("checkpointing.dir", "checkpoints");
  ck.save_every_n_steps = static_cast<int>(r.integer("checkpointing.save_every_n_steps", 0));
  ck.save_every_minutes = r.number("checkpointing.save_every_minutes");
  ck.keep_last_n = static_cast<int>(r.integer("checkpointing.keep_last_n", 1, 3));
  ck.save_final = r.boolean("checkpointing.save_final", true);

  auto& st = c.stability;
  st.on_nan = r.one_of("stability.on_nan", {"stop", "skip", "rollback"});
  st.rollback_lr_factor = r.number("stability.rollback_lr_factor", 0.5);
  st.max_rollbacks = static_cast<int>(r.integer("stability.max_rollbacks", 0, 3));
  st.spike_zscore = r.number("stability.spike_zscore", 6);
  st.spike_window = static_cast<int>(r.integer("stability.spike_window", 2, 50));
  st.on_spike = r.one_of("stability.on_spike", {"report", "skip"});

  auto& lg = c.logging;
  lg.every_n_steps = static_cast<int>(r.integer("logging.every_n_steps", 1, 1));
  lg.eval_every_n_steps = static_cast<int>(r.integer("logging.eval_every_n_steps", 0));
  lg.eval_batches = static_cast<int>(r.integer("logging.eval_batches", 1, 8));
  lg.runs_dir = resolve_path(base_dir, r.string("logging.runs_dir", "runs"));
  lg.tensorboard = r.boolean("logging.tensorboard", true);

  auto& la = c.launch;
  la.target = r.string("launch.target", "local");
  la.device = r.one_of("launch.device", {"cpu", "cuda"});
  la.nproc_per_node = static_cast<int>(r.integer("launch.nproc_per_node", 1, 1));
  la.nnodes = static_cast<int>(r.integer("launch.nnodes", 1, 1));
  la.threads_per_rank = static_cast<int>(r.integer("launch.threads_per_rank", 0));
  la.tf32 = r.boolean("launch.tf32");
  la.collectives = r.one_of("launch.collectives", {"auto", "nccl", "mpi"});
  la.check_memory = r.boolean("launch.check_memory", true);
  la.collective_timeout_s = r.number("launch.collective_timeout_s", 0);

  auto& inj = c.debug.inject_nan;
  if (r.has("debug.inject_nan")) {
    inj.enabled = true;
    inj.step = static_cast<int>(r.integer("debug.inject_nan.step", 1, 1));
    inj.layer = r.has("debug.inject_nan.layer") ? static_cast<int>(r.integer("debug.inject_nan.layer", 0)) : 0;
    inj.phase = r.one_of("debug.inject_nan.phase", {"forward", "backward", "optimizer"});
    if (r.has("debug.inject_nan.op")) inj.op = r.string("debug.inject_nan.op");
    inj.once = r.has("debug.inject_nan.once") ? r.boolean("debug.inject_nan.once", true) : true;
  }
  c.debug.check_numerics = r.boolean("debug.check_numerics");

  // Report paths as the runtime uses them.
  value["data"]["train"] = d.train;
  if (!d.val.empty()) value["data"]["val"] = d.val;
  value["logging"]["runs_dir"] = lg.runs_dir;
  c.resolved = std::move(value);
  return out;
}

}  // namespace fsdp
