#include "config/run_config.h"

#include <filesystem>
#include <stdexcept>

#include "config/embedded_schema.h"
#include "config/schema_reader.h"

namespace fsdp {

using nlohmann::json;

int dtype_bytes(Dtype d) {
  return d == Dtype::float32 ? 4 : 2;
}

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::float32:
      return "float32";
    case Dtype::bfloat16:
      return "bfloat16";
    case Dtype::float16:
      return "float16";
  }
  return "?";
}

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::gpt2:
      return "gpt2";
    case Architecture::llama:
      return "llama";
    case Architecture::qwen3:
      return "qwen3";
  }
  return "?";
}

const char* strategy_name(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::NO_SHARD:
      return "NO_SHARD";
    case ShardingStrategy::SHARD_OPTIMIZER:
      return "SHARD_OPTIMIZER";
    case ShardingStrategy::SHARD_GRAD_OP:
      return "SHARD_GRAD_OP";
    case ShardingStrategy::FULL_SHARD:
      return "FULL_SHARD";
    case ShardingStrategy::HYBRID_SHARD:
      return "HYBRID_SHARD";
  }
  return "?";
}

namespace {

const json& schema() {
  static const json s = json::parse(kRunConfigSchema);
  return s;
}

// Fills the defaults of absent keys, and creates absent sections whose keys have defaults unless
// the section has required keys (debug.inject_nan: its absence means "off") or is marked
// x-absent-means-off (launch.slurm), and leaves out keys that mean nothing here (x-only-when:
// model.rms_norm_eps of a gpt2 model) — as core/config/run-config.ts applySchemaDefaults does.
void apply_defaults(const json& node, json& value) {
  const json& s = schema_deref(schema(), node);
  if (!s.contains("properties") || !value.is_object()) return;
  for (const auto& [key, child] : s["properties"].items()) {
    const json& cs = schema_deref(schema(), child);
    if (!value.contains(key)) {
      const json* only = child.contains("x-only-when") ? &child["x-only-when"]
                         : cs.contains("x-only-when")  ? &cs["x-only-when"]
                                                       : nullptr;
      if (!schema_condition_holds(schema(), s, value, only)) continue;
      if (child.contains("default"))
        value[key] = child["default"];
      else if (cs.contains("default"))
        value[key] = cs["default"];
      else if (cs.contains("properties") && (!cs.contains("required") || cs["required"].empty()) &&
               !cs.value("x-absent-means-off", false))
        value[key] = json::object();
    }
    if (value.contains(key)) apply_defaults(child, value[key]);
  }
}

Dtype read_dtype(SchemaReader& r, const std::string& path) {
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
    // Compared as JSON numbers, never converted first: 4294967298 must not read as stage 2.
    int stage = -1;
    for (int s = 0; s < 4; ++s)
      if (z.is_number() && z == json(s)) stage = s;
    if (stage >= 0) {
      if (!value["fsdp"].contains("sharding_strategy"))
        value["fsdp"]["sharding_strategy"] = stages[stage];
      else if (value["fsdp"]["sharding_strategy"] != stages[stage])
        problems.push_back({"fsdp.zero_stage", "zero_stage " + z.dump() + " means " + stages[stage] +
                                                   ", but sharding_strategy is " +
                                                   value["fsdp"]["sharding_strategy"].dump() + "; give one of them"});
    } else {
      problems.push_back({"fsdp.zero_stage", z.dump() + " is not one of 0, 1, 2, 3"});
    }
    value["fsdp"].erase("zero_stage");
  }
  // The schema's rules between keys, on the config as given (a default is not "given").
  check_cross_keys(schema(), value, problems);
  apply_defaults(schema(), value);
  if (!value["data"].contains("seq_len") && value["model"].contains("max_seq_len"))
    value["data"]["seq_len"] = value["model"]["max_seq_len"];

  SchemaReader r(schema(), value, problems);
  RunConfig& c = out.config;
  c.name = r.string("name", "run");

  auto& m = c.model;
  const std::string arch = r.one_of("model.architecture", {"gpt2", "llama", "qwen3"});
  m.architecture = arch == "llama" ? Architecture::llama : arch == "qwen3" ? Architecture::qwen3 : Architecture::gpt2;
  m.d_model = r.integer<int>("model.d_model");
  m.n_layers = r.integer<int>("model.n_layers");
  m.n_heads = r.integer<int>("model.n_heads");
  m.vocab_size = r.integer<int>("model.vocab_size");
  m.max_seq_len = r.integer<int>("model.max_seq_len");
  m.tie_embeddings = r.boolean("model.tie_embeddings", true);
  m.init_std = r.number("model.init_std", 0.02);
  if (!m.llama_family()) {
    m.mlp_ratio = r.integer<int>("model.mlp_ratio");
    m.dropout = r.number("model.dropout");
  } else {
    // Absent n_kv_heads / head_dim have meanings of their own (the schema's descriptions);
    // intermediate_size's absence is reported by check_cross_keys (x-required-when).
    m.n_kv_heads = r.has("model.n_kv_heads") ? r.integer<int>("model.n_kv_heads") : m.n_heads;
    m.head_dim = r.has("model.head_dim") ? r.integer<int>("model.head_dim") : m.n_heads > 0 ? m.d_model / m.n_heads : 0;
    if (r.has("model.intermediate_size")) m.intermediate_size = r.integer<int>("model.intermediate_size");
    m.rms_norm_eps = r.number("model.rms_norm_eps", 1e-5);
    m.rope_theta = r.number("model.rope_theta", 10000);
    auto& rs = m.rope_scaling;
    rs.rope_type = r.one_of("model.rope_scaling.rope_type", {"default", "llama3"});
    // Each of llama3's fields missing is reported once, by check_cross_keys (x-required-when).
    if (rs.rope_type == "llama3") {
      if (r.has("model.rope_scaling.factor")) rs.factor = r.number("model.rope_scaling.factor");
      if (r.has("model.rope_scaling.low_freq_factor"))
        rs.low_freq_factor = r.number("model.rope_scaling.low_freq_factor");
      if (r.has("model.rope_scaling.high_freq_factor"))
        rs.high_freq_factor = r.number("model.rope_scaling.high_freq_factor");
      if (r.has("model.rope_scaling.original_max_position_embeddings"))
        rs.original_max_position_embeddings = r.integer<int>("model.rope_scaling.original_max_position_embeddings");
    }
    m.attention_bias = r.boolean("model.attention_bias");
    m.mlp_bias = r.boolean("model.mlp_bias");
  }

  auto& d = c.data;
  d.train = resolve_path(base_dir, r.string("data.train"));
  if (r.has("data.val")) d.val = resolve_path(base_dir, r.string("data.val"));
  d.seq_len = r.integer<int>("data.seq_len");
  d.shuffle = r.boolean("data.shuffle", true);
  d.prefetch_batches = r.integer<int>("data.prefetch_batches");

  auto& t = c.training;
  t.batch_size_per_gpu = r.integer<int>("training.batch_size_per_gpu");
  t.gradient_accumulation_steps = r.integer<int>("training.gradient_accumulation_steps");
  t.max_steps = r.integer<int>("training.max_steps");
  t.learning_rate = r.number("training.learning_rate");
  t.schedule = r.one_of("training.schedule", {"warmup_cosine", "wsd", "one_cycle", "linear", "constant"});
  t.warmup_steps = r.integer<int>("training.warmup_steps");
  t.min_lr_ratio = r.number("training.min_lr_ratio", 0.1);
  t.decay_ratio = r.number("training.decay_ratio", 0.2);
  t.weight_decay = r.number("training.weight_decay", 0.1);
  if (const json* betas = r.find("training.betas");
      betas && betas->is_array() && betas->size() == 2 && (*betas)[0].is_number() && (*betas)[1].is_number()) {
    const SchemaBounds each = schema_bounds(schema(), &schema_node(schema(), "training.betas")->at("items"));
    for (const json& beta : *betas) r.within("training.betas", beta, each);
    t.beta1 = (*betas)[0].get<double>();
    t.beta2 = (*betas)[1].get<double>();
  } else {
    problems.push_back({"training.betas", "expected two numbers [beta1, beta2]"});
  }
  t.eps = r.number("training.eps", 1e-8);
  t.max_grad_norm = r.number("training.max_grad_norm", 1.0);
  t.layer_lr_decay = r.number("training.layer_lr_decay", 1.0);
  t.seed = r.integer<std::uint32_t>("training.seed");

  auto& f = c.fsdp;
  const std::string strategy = r.one_of("fsdp.sharding_strategy",
                                        {"FULL_SHARD", "NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "HYBRID_SHARD"});
  f.sharding_strategy = strategy == "NO_SHARD"          ? ShardingStrategy::NO_SHARD
                        : strategy == "SHARD_OPTIMIZER" ? ShardingStrategy::SHARD_OPTIMIZER
                        : strategy == "SHARD_GRAD_OP"   ? ShardingStrategy::SHARD_GRAD_OP
                        : strategy == "HYBRID_SHARD"    ? ShardingStrategy::HYBRID_SHARD
                                                        : ShardingStrategy::FULL_SHARD;
  f.cpu_offload = r.boolean("fsdp.cpu_offload");
  f.backward_prefetch = r.one_of("fsdp.backward_prefetch", {"BACKWARD_PRE", "BACKWARD_POST", "NONE"});
  f.forward_prefetch = r.boolean("fsdp.forward_prefetch");
  if (r.has("fsdp.ranks_per_node")) f.ranks_per_node = r.integer<int>("fsdp.ranks_per_node");

  auto& mp = c.mixed_precision;
  mp.param_dtype = read_dtype(r, "mixed_precision.param_dtype");
  mp.reduce_dtype = read_dtype(r, "mixed_precision.reduce_dtype");
  mp.buffer_dtype = read_dtype(r, "mixed_precision.buffer_dtype");

  auto& ac = c.activation_checkpointing;
  ac.enabled = r.boolean("activation_checkpointing.enabled");
  const std::string policy = r.one_of("activation_checkpointing.policy", {"every_n", "selective", "auto"});
  ac.policy = policy == "selective" ? CheckpointPolicy::selective
              : policy == "auto"    ? CheckpointPolicy::automatic
                                    : CheckpointPolicy::every_n;
  ac.every_n_layers = r.integer<int>("activation_checkpointing.every_n_layers");
  if (r.has("activation_checkpointing.memory_budget_gb"))
    ac.memory_budget_gb = r.number("activation_checkpointing.memory_budget_gb");

  auto& ck = c.checkpointing;
  ck.dir = r.string("checkpointing.dir", "checkpoints");
  ck.save_every_n_steps = r.integer<int>("checkpointing.save_every_n_steps");
  ck.save_every_minutes = r.number("checkpointing.save_every_minutes");
  ck.keep_last_n = r.integer<int>("checkpointing.keep_last_n");
  ck.save_final = r.boolean("checkpointing.save_final", true);

  auto& st = c.stability;
  st.on_nan = r.one_of("stability.on_nan", {"stop", "skip", "rollback"});
  st.rollback_lr_factor = r.number("stability.rollback_lr_factor", 0.5);
  st.max_rollbacks = r.integer<int>("stability.max_rollbacks");
  st.spike_zscore = r.number("stability.spike_zscore", 6);
  st.spike_window = r.integer<int>("stability.spike_window");
  st.on_spike = r.one_of("stability.on_spike", {"report", "skip"});

  auto& lg = c.logging;
  lg.every_n_steps = r.integer<int>("logging.every_n_steps");
  lg.eval_every_n_steps = r.integer<int>("logging.eval_every_n_steps");
  lg.eval_batches = r.integer<int>("logging.eval_batches");
  lg.runs_dir = resolve_path(base_dir, r.string("logging.runs_dir", "runs"));
  lg.tensorboard = r.boolean("logging.tensorboard", true);

  auto& la = c.launch;
  la.target = r.string("launch.target", "local");
  la.device = r.one_of("launch.device", {"cpu", "cuda"});
  la.nproc_per_node = r.integer<int>("launch.nproc_per_node");
  la.nnodes = r.integer<int>("launch.nnodes");
  la.threads_per_rank = r.integer<int>("launch.threads_per_rank");
  la.tf32 = r.boolean("launch.tf32");
  la.collectives = r.one_of("launch.collectives", {"auto", "nccl", "mpi"});
  la.check_memory = r.boolean("launch.check_memory", true);
  la.collective_timeout_s = r.number("launch.collective_timeout_s", 0);
  la.heartbeat_timeout_s = r.number("launch.heartbeat_timeout_s", 20);

  auto& inj = c.debug.inject_nan;
  if (r.has("debug.inject_nan")) {
    inj.enabled = true;
    inj.step = r.integer<int>("debug.inject_nan.step");
    inj.layer = r.has("debug.inject_nan.layer") ? r.integer<int>("debug.inject_nan.layer") : 0;
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
