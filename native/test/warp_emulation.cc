#include "warp_emulation.h"

#include "half_rounding.h"

#include <ucontext.h>

#include <cstring>
#include <memory>

namespace fsdp::emulation {

namespace {

constexpr std::size_t kStackBytes = 128 * 1024;
constexpr std::size_t kSlot = 64;  // bytes a lane may deposit in one collective
constexpr std::size_t kMaxReports = 8;

struct Barrier {
  int arrived = 0;
  long generation = 0;
};

struct Fiber {
  ucontext_t context{};
  std::unique_ptr<char[]> stack;
  Dim3 index;
  bool done = false;
};

/** The block being run: its fibers, barriers, shared memory and the exchange slots of its warps. */
struct Block {
  std::vector<Fiber> fibers;
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  std::vector<unsigned char> slots;  // [warp][lane][kSlot]
  std::vector<unsigned char> shared;
  Dim3 index, dim;
  int current = -1;
  long events = 0;  // barrier releases and finished fibers: progress, for deadlock detection
  ucontext_t scheduler{};
  const std::function<void()>* kernel = nullptr;
  std::vector<std::string> reports;
  bool deadlocked = false;
};

Block* block = nullptr;

Fiber& me() {
  return block->fibers[block->current];
}

void yield() {
  swapcontext(&me().context, &block->scheduler);
}

/** Waits until n fibers have arrived at b (this one included). */
void wait(Barrier& b, int n) {
  const long generation = b.generation;
  if (++b.arrived == n) {
    b.arrived = 0;
    ++b.generation;
    ++block->events;
    return;
  }
  while (b.generation == generation && !block->deadlocked) yield();
}

void fiber_entry(int index) {
  block->current = index;
  (*block->kernel)();
  me().done = true;
  ++block->events;
}

int warp_of_me() {
  return static_cast<int>(me().index.x / 32);
}

}  // namespace

const Dim3& thread_index() {
  return me().index;
}
const Dim3& block_index() {
  return block->index;
}
const Dim3& block_dim() {
  return block->dim;
}
unsigned char* dynamic_shared() {
  return block->shared.data();
}

void sync_threads() {
  wait(block->block_barrier, static_cast<int>(block->fibers.size()));
}

const unsigned char* exchange(const void* mine, std::size_t bytes) {
  const int w = warp_of_me();
  unsigned char* warp_slots = block->slots.data() + static_cast<std::size_t>(w) * 32 * kSlot;
  std::memcpy(warp_slots + (me().index.x % 32) * kSlot, mine, bytes < kSlot ? bytes : kSlot);
  wait(block->warp_barriers[w], 32);
  return warp_slots;
}

void exchange_done() {
  wait(block->warp_barriers[warp_of_me()], 32);
}

void report(const std::string& what) {
  if (block->reports.size() < kMaxReports) {
    block->reports.push_back("block (" + std::to_string(block->index.x) + ", " + std::to_string(block->index.y) +
                             ") thread " + std::to_string(me().index.x) + ": " + what);
  }
}

bool in_shared(const void* p, std::size_t bytes) {
  const auto* c = static_cast<const unsigned char*>(p);
  return c >= block->shared.data() && c + bytes <= block->shared.data() + block->shared.size();
}

namespace {

/**
 * Runs one block to its end. Apart from launch() so that no local of the grid loop lives in the
 * function that calls getcontext (which, like setjmp, may clobber them).
 */
__attribute__((noinline)) void run_block(Block& b) {
  const int threads = static_cast<int>(b.fibers.size());
  b.shared.assign(b.shared.size(), 0);
  for (int i = 0; i < threads; ++i) {
    Fiber& f = b.fibers[static_cast<std::size_t>(i)];
    f.index = {static_cast<unsigned>(i), 0, 0};
    f.done = false;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &b.scheduler;
    makecontext(&f.context, reinterpret_cast<void (*)()>(fiber_entry), 1, i);
  }
  // Round robin until every fiber is done; a whole round without progress is a deadlock (threads
  // waiting at different barriers, or some at a barrier others never reach).
  for (bool running = true; running && !b.deadlocked;) {
    running = false;
    const long before = b.events;
    for (int i = 0; i < threads; ++i) {
      if (b.fibers[static_cast<std::size_t>(i)].done) continue;
      running = true;
      b.current = i;
      swapcontext(&b.scheduler, &b.fibers[static_cast<std::size_t>(i)].context);
    }
    if (running && b.events == before) {
      b.current = 0;
      report("deadlock: the block's threads wait at barriers that never complete");
      b.deadlocked = true;
      // Let every fiber run to its end (barriers now return at once) so their stacks unwind.
      for (int i = 0; i < threads; ++i) {
        if (b.fibers[static_cast<std::size_t>(i)].done) continue;
        b.current = i;
        swapcontext(&b.scheduler, &b.fibers[static_cast<std::size_t>(i)].context);
      }
    }
  }
}

}  // namespace

std::vector<std::string> launch(Dim3 grid, int threads, std::size_t shared_bytes, const std::function<void()>& kernel) {
  if (threads % 32 != 0) return {"launch: threads must be whole warps"};
  Block b;
  block = &b;
  b.kernel = &kernel;
  b.dim = {static_cast<unsigned>(threads), 1, 1};
  b.fibers.resize(static_cast<std::size_t>(threads));
  for (Fiber& f : b.fibers) f.stack = std::make_unique<char[]>(kStackBytes);
  b.warp_barriers.resize(static_cast<std::size_t>(threads / 32));
  b.slots.assign(static_cast<std::size_t>(threads) * kSlot, 0);
  b.shared.resize(shared_bytes);
  for (unsigned by = 0; by < grid.y && b.reports.empty(); ++by) {
    for (unsigned bx = 0; bx < grid.x && b.reports.empty(); ++bx) {
      b.index = {bx, by, 0};
      run_block(b);
    }
  }
  std::vector<std::string> reports = b.reports;
  block = nullptr;
  return reports;
}

std::uint16_t bf16_bits(float x) {
  return float_to_bf16(x);
}
float bf16_value(std::uint16_t bits) {
  return bf16_to_float(bits);
}
std::uint16_t half_bits(float x) {
  return float_to_f16(x);
}
float half_value(std::uint16_t bits) {
  return f16_to_float(bits);
}

}  // namespace fsdp::emulation

namespace fsdp::cuda::mma {

namespace {

using emulation::exchange;
using emulation::exchange_done;

float element(std::uint32_t reg, int half, bool bf16) {
  const auto bits = static_cast<std::uint16_t>(half ? reg >> 16 : reg & 0xffffu);
  return bf16 ? emulation::bf16_value(bits) : emulation::half_value(bits);
}

struct MmaOperands {
  std::uint32_t a[4], b[2];
};

}  // namespace

void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2], bool bf16) {
  MmaOperands mine;
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  const unsigned char* all = exchange(&mine, sizeof mine);
  // The whole A (16 x 16) and B (16 x 8) from the lanes' fragments (layouts: mma.cuh).
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    MmaOperands o;
    std::memcpy(&o, all + lane * 64, sizeof o);
    const int g = lane / 4, t = lane % 4;
    for (int h = 0; h < 2; ++h) {
      A[g][2 * t + h] = element(o.a[0], h, bf16);
      A[g + 8][2 * t + h] = element(o.a[1], h, bf16);
      A[g][2 * t + 8 + h] = element(o.a[2], h, bf16);
      A[g + 8][2 * t + 8 + h] = element(o.a[3], h, bf16);
      B[2 * t + h][g] = element(o.b[0], h, bf16);
      B[2 * t + 8 + h][g] = element(o.b[1], h, bf16);
    }
  }
  exchange_done();
  const int lane = static_cast<int>(emulation::thread_index().x % 32), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    float acc = 0.0f;
    for (int k = 0; k < 16; ++k) acc += A[row][k] * B[k][col];
    d[i] += acc;
  }
}

namespace {

/** Each lane's row address; lane i receives, of matrix j, row i / 4 words i % 4 (or, transposed, column i / 4). */
void ldmatrix(std::uint32_t (&r)[4], const void* p, bool trans) {
  const void* mine = p;
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    emulation::report("ldmatrix: a row address is not 16-byte aligned");
  if (!emulation::in_shared(p, 16)) emulation::report("ldmatrix: a row lies outside shared memory");
  const unsigned char* all = exchange(&mine, sizeof mine);
  const void* rows[32];
  for (int l = 0; l < 32; ++l) std::memcpy(&rows[l], all + l * 64, sizeof rows[l]);
  exchange_done();
  const int i = static_cast<int>(emulation::thread_index().x % 32);
  auto read16 = [](const void* row, int element) {
    if (!emulation::in_shared(row, 16)) return std::uint16_t{0};
    std::uint16_t v;
    std::memcpy(&v, static_cast<const unsigned char*>(row) + 2 * element, sizeof v);
    return v;
  };
  for (int j = 0; j < 4; ++j) {
    std::uint16_t lo, hi;
    if (!trans) {
      lo = read16(rows[8 * j + i / 4], 2 * (i % 4));
      hi = read16(rows[8 * j + i / 4], 2 * (i % 4) + 1);
    } else {
      lo = read16(rows[8 * j + 2 * (i % 4)], i / 4);
      hi = read16(rows[8 * j + 2 * (i % 4) + 1], i / 4);
    }
    r[j] = static_cast<std::uint32_t>(lo) | static_cast<std::uint32_t>(hi) << 16;
  }
}

}  // namespace

void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  ldmatrix(r, p, false);
}
void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  ldmatrix(r, p, true);
}

void cp_async16(void* dst, const void* src, bool valid) {
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 || (valid && reinterpret_cast<std::uintptr_t>(src) % 16 != 0)) {
    emulation::report("cp.async: an address is not 16-byte aligned");
    return;
  }
  if (!emulation::in_shared(dst, 16)) {
    emulation::report("cp.async: the destination lies outside shared memory");
    return;
  }
  if (valid)
    std::memcpy(dst, src, 16);
  else
    std::memset(dst, 0, 16);
}

}  // namespace fsdp::cuda::mma
