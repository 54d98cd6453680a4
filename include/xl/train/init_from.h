// train.init_from: a new run that starts from another run's weights (fine-tuning a pretrained
// model, a bigger head on a trained body).
#pragma once

#include <string>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"

namespace xl::train {

/// Loads the weights train.init_from names (a run folder: its best checkpoint; or a checkpoint)
/// into `model`, except the parameters the checkpoint lacks (a new head) and those
/// train.init_exclude names, which keep their fresh values. Another family's checkpoint,
/// shapes that differ and a load of nothing are UserErrors. Returns what it did, for the log.
std::string load_initial_weights(const config::Config& config, models::LanguageModelImpl& model);

} // namespace xl::train
