// The tensor-core attention kernels themselves (backend/cuda/kernels/flash_*.cuh), run on the CPU
// through the warp emulation (warp_emulation.h) and compared with the reference attention: head
// sizes 32, 64 and 128, sequences that end mid-tile, bfloat16 and float16, the forward's three
// modes (full, log-sum-exp only, a given log-sum-exp with a planted NaN), and the backward's dK, dV
// and dQ. This is what can be checked of the kernels without a GPU: their fragment indexing, tile
// schedule, masking, online softmax and pipelines. The same kernels run on the GPU in
// cuda/attention_kernel_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention_case.h"
#include "warp_emulation.h"  // first among the kernels' includes: the CUDA they are written in
#include "backend/cuda/kernels/flash_backward.cuh"
#include "backend/cuda/kernels/flash_forward.cuh"

namespace fsdp::test {
namespace {

using emulation::Dim3;

/** A 16-bit compute dtype on the host: its element type, rounding and conversions. */
template <class E>
struct Dtype16;
template <>
struct Dtype16<__nv_bfloat16> {
  static float round(float x) { return emulation::bf16_value(emulation::bf16_bits(x)); }
  static __nv_bfloat16 of(float x) { return {emulation::bf16_bits(x)}; }
  static float value(__nv_bfloat16 x) { return emulation::bf16_value(x.bits); }
  static constexpr double kTolerance =
      8e-3;  // y (dq, dk, dv: 1.5x): P, dS and the outputs rounded to 8 bits (measured 2.4e-3)
};
template <>
struct Dtype16<__half> {
  static float round(float x) { return emulation::half_value(emulation::half_bits(x)); }
  static __half of(float x) { return {emulation::half_bits(x)}; }
  static float value(__half x) { return emulation::half_value(x.bits); }
  static constexpr double kTolerance = 1.5e-3;  // measured 3.2e-4
};

/** A device buffer stand-in with guard zones on both sides: a kernel writing outside it is caught. */
template <class V>
class Guarded {
 public:
  Guarded(std::size_t n, V fill) : data_(n + 2 * kGuard, fill), n_(n) {
    for (std::size_t i = 0; i < kGuard; ++i) data_[i] = data_[kGuard + n + i] = canary();
  }
  V* get() { return data_.data() + kGuard; }
  const V* get() const { return data_.data() + kGuard; }
  std::size_t size() const { return n_; }
  bool guards_intact() const {
    for (std::size_t i = 0; i < kGuard; ++i)
      if (std::memcmp(&data_[i], &canary_value_, sizeof(V)) != 0 ||
          std::memcmp(&data_[kGuard + n_ + i], &canary_value_, sizeof(V)) != 0)
        return false;
    return true;
  }

 private:
  static constexpr std::size_t kGuard = 64;  // elements: keeps the data 16-byte aligned
  V canary() {
    std::memset(&canary_value_, 0x5a, sizeof(V));
    return canary_value_;
  }
  std::vector<V> data_;
  std::size_t n_;
  V canary_value_{};
};

template <class E>
Guarded<E> to_device(const std::vector<float>& x) {
  Guarded<E> g(x.size(), Dtype16<E>::of(0.0f));
  for (std::size_t i = 0; i < x.size(); ++i) g.get()[i] = Dtype16<E>::of(x[i]);
  return g;
}

template <class E>
std::vector<float> to_host(const Guarded<E>& g) {
  std::vector<float> out(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) out[i] = Dtype16<E>::value(g.get()[i]);
  return out;
}

std::string joined(const std::vector<std::string>& reports) {
  std::string s;
  for (const auto& r : reports) s += r + "\n";
  return s;
}

/** The launch geometry of flash_forward.cu / flash_backward.cu, on the emulation. */
template <class E, int D>
void forward(Guarded<E>* y, Guarded<float>& lse, const Guarded<E>& qkv, const flash::Shape& sh, bool given_lse) {
  const Dim3 grid{static_cast<unsigned>(flash::tile_count(sh.T, flash::kQueryTile)), static_cast<unsigned>(sh.B * sh.H),
                  1};
  E* out = y ? y->get() : nullptr;
  const auto reports = emulation::launch(grid, flash::kThreads, cuda::forward_shared_bytes<D>(), [&] {
    cuda::flash_forward_kernel<E, D>(out, lse.get(), qkv.get(), sh, given_lse);
  });
  EXPECT_TRUE(reports.empty()) << joined(reports);
  EXPECT_TRUE(lse.guards_intact() && (!y || y->guards_intact())) << "the forward wrote outside its outputs";
}

template <class E, int D>
void backward(Guarded<E>& dqkv, const Guarded<E>& dy, const Guarded<E>& qkv, const Guarded<float>& lse,
              const Guarded<float>& delta, const flash::Shape& sh) {
  const unsigned heads = static_cast<unsigned>(sh.B * sh.H);
  auto reports = emulation::launch(
      {static_cast<unsigned>(flash::tile_count(sh.T, flash::kKeyTile)), heads, 1}, flash::kThreads,
      cuda::dkdv_shared_bytes<D>(),
      [&] { cuda::flash_dkdv_kernel<E, D>(dqkv.get(), dy.get(), qkv.get(), lse.get(), delta.get(), sh); });
  EXPECT_TRUE(reports.empty()) << "dK/dV: " << joined(reports);
  reports = emulation::launch(
      {static_cast<unsigned>(flash::tile_count(sh.T, flash::kQueryTile)), heads, 1}, flash::kThreads,
      cuda::dq_shared_bytes<D>(),
      [&] { cuda::flash_dq_kernel<E, D>(dqkv.get(), dy.get(), qkv.get(), lse.get(), delta.get(), sh); });
  EXPECT_TRUE(reports.empty()) << "dQ: " << joined(reports);
  EXPECT_TRUE(dqkv.guards_intact()) << "the backward wrote outside dqkv";
}

/** Forward and backward of one case against the reference; returns the kernel's y for further checks. */
template <class E, int D>
void check_case(long B, long T, long H, std::uint64_t seed) {
  const long C = D * H;
  SCOPED_TRACE("B " + std::to_string(B) + " T " + std::to_string(T) + " H " + std::to_string(H) + " head size " +
               std::to_string(D));
  const AttentionCase c(B, T, C, H, seed, Dtype16<E>::round);
  const flash::Shape sh = flash::Shape::of(B, T, C, H);
  const Guarded<E> qkv = to_device<E>(c.qkv), dy = to_device<E>(c.dy);
  Guarded<E> y(c.y.size(), Dtype16<E>::of(NAN));
  Guarded<float> lse(c.lse.size(), NAN);
  forward<E, D>(&y, lse, qkv, sh, false);
  const std::vector<float> yk = to_host(y), lk(lse.get(), lse.get() + lse.size());
  EXPECT_LE(scaled_error(yk, c.y), Dtype16<E>::kTolerance) << "y";
  EXPECT_LE(scaled_error(lk, c.lse), 1e-5) << "log-sum-exp";

  // Log-sum-exp only (selective checkpointing's recompute): the same numbers, bit for bit.
  Guarded<float> lse_only(c.lse.size(), NAN);
  forward<E, D>(nullptr, lse_only, qkv, sh, false);
  EXPECT_EQ(0, std::memcmp(lse_only.get(), lse.get(), sizeof(float) * lse.size()))
      << "lse-only mode differs from the full forward";

  // Backward from the kernel's own y and lse, as the backend runs it.
  Guarded<float> delta(c.lse.size(), 0.0f);
  const std::vector<float> dl = c.delta_of(yk);
  std::copy(dl.begin(), dl.end(), delta.get());
  Guarded<E> dqkv(c.qkv.size(), Dtype16<E>::of(NAN));
  backward<E, D>(dqkv, dy, qkv, lse, delta, sh);
  const std::vector<float> g = to_host(dqkv);
  // Per part (dq, dk, dv have different scales).
  for (int part = 0; part < 3; ++part) {
    std::vector<float> got;
    std::vector<double> want;
    for (long bt = 0; bt < B * T; ++bt)
      for (long i = 0; i < C; ++i) {
        got.push_back(g[bt * 3 * C + part * C + i]);
        want.push_back(c.dqkv[bt * 3 * C + part * C + i]);
      }
    EXPECT_LE(scaled_error(got, want), 1.5 * Dtype16<E>::kTolerance) << "d"
                                                                     << "qkv"[part];
  }
}

TEST(FlashKernelsEmulated, Bfloat16HeadSize64MatchesTheReferenceOnWholeAndRaggedTiles) {
  check_case<__nv_bfloat16, 64>(1, 128, 2, 1);
  check_case<__nv_bfloat16, 64>(2, 100, 1, 2);
  check_case<__nv_bfloat16, 64>(1, 1, 1, 3);
}

TEST(FlashKernelsEmulated, Bfloat16HeadSize32MatchesTheReference) {
  check_case<__nv_bfloat16, 32>(1, 130, 2, 4);
  check_case<__nv_bfloat16, 32>(1, 17, 1, 5);
}

TEST(FlashKernelsEmulated, Bfloat16HeadSize128MatchesTheReference) {
  // 32-query tiles in dK/dV at this head size: a key tile meets two masked query tiles.
  check_case<__nv_bfloat16, 128>(1, 97, 1, 6);
}

TEST(FlashKernelsEmulated, Float16MatchesTheReference) {
  check_case<__half, 64>(1, 80, 1, 7);
  check_case<__half, 128>(1, 33, 1, 8);
}

TEST(FlashKernelsEmulated, AGivenLogSumExpNormalisesAndCarriesAPlantedNanToItsRowOnly) {
  using E = __nv_bfloat16;
  constexpr int D = 32;
  const long B = 1, T = 70, H = 2, C = D * H;
  const AttentionCase c(B, T, C, H, 9, Dtype16<E>::round);
  const flash::Shape sh = flash::Shape::of(B, T, C, H);
  const Guarded<E> qkv = to_device<E>(c.qkv);
  Guarded<E> y(c.y.size(), Dtype16<E>::of(0.0f)), y_given(c.y.size(), Dtype16<E>::of(0.0f));
  Guarded<float> lse(c.lse.size(), 0.0f);
  forward<E, D>(&y, lse, qkv, sh, false);
  forward<E, D>(&y_given, lse, qkv, sh, true);
  EXPECT_LE(scaled_error(to_host(y_given), c.y), Dtype16<E>::kTolerance);

  // A NaN in head 1's log-sum-exp of position 66 (the second query tile): that row's head-1 slice is NaN, nothing else.
  const long h = 1, t = 66;
  lse.get()[h * T + t] = NAN;
  Guarded<E> y_nan(c.y.size(), Dtype16<E>::of(0.0f));
  forward<E, D>(&y_nan, lse, qkv, sh, true);
  const std::vector<float> a = to_host(y_given), b = to_host(y_nan);
  for (long r = 0; r < T; ++r)
    for (long i = 0; i < C; ++i) {
      const bool planted = r == t && i / D == h;
      const float v = b[r * C + i];
      if (planted)
        EXPECT_TRUE(std::isnan(v)) << "row " << r << " channel " << i;
      else
        EXPECT_EQ(a[r * C + i], v) << "row " << r << " channel " << i;
    }
}

}  // namespace
}  // namespace fsdp::test
