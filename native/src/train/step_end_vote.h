// What every rank decides together after each step: stop (a SIGINT/SIGTERM/SIGUSR1 may reach one
// rank only) and save by the clock (clocks differ between ranks; rank 0's decides). One rank
// deciding alone would leave the others waiting in the next collective, so every rank votes and
// all of them take the outcome.
#pragma once
#include <atomic>

#include "parallel/collectives.h"

namespace fsdp {

struct StepEndVote {
  bool stop = false;  // some rank received a stop signal
  bool save = false;  // rank 0's clock says a checkpoint is due
  int signal = 0;     // this rank's signal, 0 when another rank's stopped the run
};

/** A collective: every rank calls it after every step. `stop_signal` may be null (nothing stops the run). */
StepEndVote vote_at_step_end(Collectives& world, const std::atomic<int>* stop_signal, bool clock_says_save);

}  // namespace fsdp
