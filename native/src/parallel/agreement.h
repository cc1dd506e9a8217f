// Ranks that decide alone deadlock: one rank throws while the others wait for it in a collective.
// These helpers turn one rank's view into every rank's — a failure, a string, a per-rank record —
// so that every rank takes the same branch.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parallel/collectives.h"

namespace fsdp {

/**
 * A failure every rank of the job throws together, after agreeing on it (first_failure): each rank
 * can end as usual. Any other exception may have reached one rank alone while the others wait for it
 * in a collective, and that rank must end the job (native/src/cli/main.cc).
 */
class JobFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** The lowest-numbered rank whose `mine` is not empty and its text, on every rank (-1 and "" when there is none). */
std::pair<int, std::string> first_nonempty(Collectives& world, const std::string& mine);

/** first_nonempty's text for a failure message, naming the rank when it is not rank 0. */
std::string first_failure(Collectives& world, const std::string& mine);

/** root's string, on every rank. */
std::string broadcast_string(Collectives& world, const std::string& s, int root);

/** Every rank's `mine` (the same length on every rank), rank after rank. */
std::vector<double> gather_values(Collectives& world, const std::vector<double>& mine);

}  // namespace fsdp
