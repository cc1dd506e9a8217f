// The Node addon: gives the editor the runtime's own truth — device probe, config validation,
// memory plan, a one-step smoke run on a tiny batch — without ever training in the editor's process.
// Every function takes the resolved run config object (core/config/run-config.ts resolveRunConfig);
// absent keys take the schema's defaults.
#include <napi.h>

#include <nlohmann/json.hpp>

#include "validation/validate.h"
#include "memory/memory_plan.h"
#include "backend/device_probe.h"
#include "addon/smoke_step.h"

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
    g.Set("computeCapability", std::to_string(p.gpus[i].compute_capability_major) + "." +
                                   std::to_string(p.gpus[i].compute_capability_minor));
    gpus.Set(i, g);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("cpu", cpu);
  out.Set("gpus", gpus);
  out.Set("cudaBuilt", p.cuda_built);
  out.Set("blas", p.blas);
  out.Set("blasKernels", from_json(env, p.blas_kernels.to_json()));
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

// smokeStep(config) -> Promise of {loss, expected_loss, grad_norm, init_ms, forward_backward_ms,
// tokens, n_params, mem_peak, backend, threads}: one forward/backward on a tiny random batch,
// off the editor's JavaScript thread. Rejects with the runtime's own problems for a config it
// cannot run.
class SmokeStepWorker final : public Napi::AsyncWorker {
 public:
  SmokeStepWorker(Napi::Env env, fsdp::RunConfig config)
      : Napi::AsyncWorker(env), config_(std::move(config)), deferred_(env) {}
  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      result_ = fsdp::smoke_step(config_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(from_json(Env(), result_)); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  fsdp::RunConfig config_;
  Napi::Promise::Deferred deferred_;
  json result_;
};

Napi::Value SmokeStep(const Napi::CallbackInfo& info) {
  fsdp::ValidateOptions options;
  options.check_files = false;  // random tokens: the data files are not read
  options.cuda_built = fsdp::probe_devices().cuda_built;
  fsdp::RunConfig config;
  const auto problems = fsdp::check_run_config(config_argument(info), "", options, &config);
  if (fsdp::has_errors(problems)) {
    std::string msg = "smokeStep: the runtime cannot run this config:";
    for (const auto& p : problems)
      if (!p.warning) msg += "\n  " + fsdp::format_problem("config", p);
    Napi::Promise::Deferred refused(info.Env());
    refused.Reject(Napi::Error::New(info.Env(), msg).Value());
    return refused.Promise();
  }
  auto* worker = new SmokeStepWorker(info.Env(), std::move(config));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probeDevices", Napi::Function::New(env, ProbeDevices));
  exports.Set("validateConfig", Napi::Function::New(env, ValidateConfig));
  exports.Set("memoryPlan", Napi::Function::New(env, MemoryPlan));
  exports.Set("smokeStep", Napi::Function::New(env, SmokeStep));
  return exports;
}

}  // namespace

NODE_API_MODULE(fsdp_native, Init)
