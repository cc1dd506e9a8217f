// The Node addon: gives the editor the runtime's own truth without training in its process.
#include <napi.h>

#include "runtime/device_probe.h"

namespace {

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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("probeDevices", Napi::Function::New(env, ProbeDevices));
  return exports;
}

}  // namespace

NODE_API_MODULE(fsdp_native, Init)
