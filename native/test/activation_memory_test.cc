// Activation checkpointing and the memory plan, on the fast path: every policy computes bitwise
// the same loss and gradients (dropout masks replayed), and the allocator's measured peaks equal
// the plan of native/MEMORY.md in every category.
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "memory/memory_plan.h"
#include "test_config.h"

namespace fsdp {
namespace {

struct Case {
  const char* name;
  int layers;
  ActivationPolicy (*policy)(int);
};

ActivationPolicy none(int L) {
  return ActivationPolicy::none(L);
}
ActivationPolicy every1(int L) {
  return ActivationPolicy::every_n(L, 1);
}
ActivationPolicy every2(int L) {
  return ActivationPolicy::every_n(L, 2);
}
ActivationPolicy selective(int L) {
  return ActivationPolicy::selective(L);
}

const Case kCases[] = {{"none", 3, none},
                       {"every_n=1", 3, every1},
                       {"every_n=2 (last kept)", 3, every2},
                       {"every_n=2 (last recomputed)", 4, every2},
                       {"selective", 3, selective},
                       {"selective L=1", 1, selective}};

RunConfig config_for(int layers, const ModelShape& s, long B, long T, float dropout) {
  auto j = test::tiny_config_json(static_cast<int>(s.C), layers, static_cast<int>(s.H), static_cast<int>(s.V),
                                  static_cast<int>(T), static_cast<int>(B));
  j["model"]["dropout"] = dropout;
  return test::parse_or_die(j);
}

TEST(ActivationCheckpointing, EveryPolicyGivesBitwiseTheSameGradients) {
  for (const Case& c : kCases) {
    const ModelShape s = test::small_shape(40, 16, c.layers, 2, 12, true);
    const test::RandomTokens tok(3, 12, s.V, 5);
    test::FastModel plain(s, 0.1f, none(c.layers));
    test::FastModel ckpt(s, 0.1f, c.policy(c.layers));
    const double a = plain.gpt->forward_backward(tok.batch(), 1.0f, 77);
    const double b = ckpt.gpt->forward_backward(tok.batch(), 1.0f, 77);
    EXPECT_EQ(a, b) << c.name;
    for (int u = 0; u < plain.state->unit_count(); ++u) {
      const std::size_t n = plain.layout.units[u].numel;
      EXPECT_EQ(0, std::memcmp(plain.state->grads(u), ckpt.state->grads(u), n * sizeof(float)))
          << c.name << " " << plain.layout.units[u].name;
    }
  }
}

TEST(MemoryPlan, MeasuredPeaksEqualThePlanInEveryCategory) {
  for (const Case& c : kCases) {
    const long B = 3, T = 12;
    const ModelShape s = test::small_shape(40, 16, c.layers, 2, T, true);
    const RunConfig config = config_for(c.layers, s, B, T, 0.1f);
    const MemoryPlan plan = plan_memory(config, c.policy(c.layers));
    test::FastModel fast(s, 0.1f, c.policy(c.layers));
    Allocator& alloc = fast.be.allocator();
    // The data loader's ring (MEMORY.md "other"), as the trainer holds it.
    Buffer ring = alloc.allocate(MemoryCategory::other, (config.data.prefetch_batches + 1) * 8 * B * T);
    alloc.reset_peak();
    const test::RandomTokens tok(B, T, s.V, 5);
    fast.gpt->forward_backward(tok.batch(), 1.0f, 77);
    const MemoryUsage peak = alloc.peak();
    for (int k = 0; k < kMemoryCategories; ++k) {
      EXPECT_EQ(peak.bytes[k], plan.device.bytes[k]) << c.name << " " << category_name(static_cast<MemoryCategory>(k));
    }
    EXPECT_EQ(peak.total, plan.backward) << c.name;
    EXPECT_EQ(peak.total, plan.device.total) << c.name;
    // Everything a step allocates is returned at its end.
    EXPECT_EQ(alloc.live().bytes[static_cast<int>(MemoryCategory::activations)], 0u) << c.name;
    EXPECT_EQ(alloc.live().bytes[static_cast<int>(MemoryCategory::workspace)], 0u) << c.name;
  }
}

}  // namespace
}  // namespace fsdp
