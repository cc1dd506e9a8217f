// The Node addon: gives the editor the runtime's own truth — device probe, config validation,
// memory plan, a one-step smoke run on a tiny batch — without ever training in the editor's process.
// Every function takes the resolved run config object (core/config/run-config.ts resolveRunConfig);
// absent keys take the schema's defaults.
#include <napi.h>

#include <nlohmann/json.hpp>

#include "config/validate.h"
#include "memory/memory_plan.h"
#include "runtime/device_probe.h"

namespace {

using nlohmann::json;

json to_json(const Napi::Env& env, const Napi::Value& v) {
  Napi::Object JSON = env.Global().Get("JSON").As<Napi::Object>();
  Napi::Value text = JSON.Get("stringify").As<Napi::Function>().Call(JSON, {v});
  if (!text.IsString()) throw Napi::TypeError::New(env, "expected a run config object");
  return json::parse(text.As<Napi::String>().Utf8Value());
}

Napi::Value from_json(const Napi::Env& env, const json& j) {
  Napi::Object JSON = env.Global().Get("JSON").As<Napi::Object>();
  return JSON.Get("parse").As<Napi::Function>().Call(JSON, {Napi::String::New(env, j.dump())});
}

json config_argument(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(info.Env(), "expected a run config object");
  return to_json(info.Env(), info[0]);
}

Napi::Value ProbeDevices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const fsdp::DeviceProbe p = fsdp::probe_devices();
  Napi::Object cpu = Napi::Object::New(env);
  cpu.Set("logicalCores", p.cpu.logical_cores);
  cpu.Set("ompMaxThreads", p.cpu.omp_max_threads);
  cpu.Set("memoryBytes", static_cast<double>(p.cpu.memory_bytes));
  cpu.Set("modelName", p.cpu.model_name);
  Napi::Array gpus = Napi::Array::New(env, p.gpus.size());
  for (size_t i = 0; i < p.gpus.size(); ++i) {
    Napi::Object g = Napi::Object::New(env);
    g.Set("index", p.gpus[i].index);
    g.Set("name", p.gpus[i].name);
    g.Set("memoryBytes", static_cast<double>(p.gpus[i].memory_bytes));
    g.Set("computeCapability", std::to_string(p.gpus[i].compute_capability_major) + "." + std::to_string(p.gpus[i].compute_capability_minor));
    gpus.Set(i, g);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("cpu", cpu);
  out.Set("gpus", gpus);
  out.Set("cudaBuilt", p.cuda_built);
  out.Set("blas", p.blas);
  return out;
}

// validateConfig(config) -> { ok, errors: [{path, message}], warnings: [{path, message}] }
Napi::Value ValidateConfig(const Napi::CallbackInfo& info) {
  const json config = config_argument(info);
  fsdp::ValidateOptions options;
  options.cuda_built = fsdp::probe_devices().cuda_built;
  const auto problems = fsdp::check_run_config(config, "", options);
  json errors = json::array(), warnings = json::array();
  for (const auto& p : problems) (p.warning ? warnings : errors).push_back({{"path", p.path}, {"message", p.message}});
  return from_json(info.Env(), {{"ok", errors.empty()}, {"errors", errors}, {"warnings", warnings}});
}

// memoryPlan(config) -> the MemoryPlan of the metrics protocol (bytes per rank), made without
// allocating. Configs this build cannot run (cuda, bfloat16, several ranks) still get a plan.
Napi::Value MemoryPlan(const Napi::CallbackInfo& info) {
  const fsdp::ParsedConfig parsed = fsdp::parse_run_config(config_argument(info));
  if (!parsed.ok()) {
    std::string msg = "memoryPlan: the config is not valid:";
    for (const auto& p : parsed.problems) msg += "\n  " + fsdp::format_problem("config", p);
    throw Napi::Error::New(info.Env(), msg);
  }
  return from_json(info.Env(), fsdp::plan_memory(parsed.config).to_json());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probeDevices", Napi::Function::New(env, ProbeDevices));
  exports.Set("validateConfig", Napi::Function::New(env, ValidateConfig));
  exports.Set("memoryPlan", Napi::Function::New(env, MemoryPlan));
  return exports;
}

}  // namespace

NODE_API_MODULE(fsdp_native, Init)
