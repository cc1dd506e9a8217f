#include "train/step_end_vote.h"

namespace fsdp {

StepEndVote vote_at_step_end(Collectives& world, const std::atomic<int>* stop_signal, bool clock_says_save) {
  const int signo = stop_signal ? stop_signal->load() : 0;
  double votes[2] = {signo != 0 ? 1.0 : 0.0, clock_says_save ? 1.0 : 0.0};
  world.all_reduce(votes, 2, CommType::f64);
  return {votes[0] > 0, votes[1] > 0, signo};
}

}  // namespace fsdp
