// Learning-rate schedules (schema training.schedule), stepped once per optimizer step.
#pragma once
#include "config/run_config.h"

namespace fsdp {

/** The learning rate of optimizer step `step` (1-based) of training.max_steps. */
double scheduled_lr(const TrainingConfig& t, long step);

}  // namespace fsdp
