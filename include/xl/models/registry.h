// The model families xl knows: the one place that lists them (registry.cpp), and where a
// program adds its own (a test family, a plugin). Everything that differs between families is
// asked of their descriptors (models/family.h).
#pragma once

#include <deque>
#include <string>

#include "xl/config/schema.h"
#include "xl/models/family.h"

namespace xl::models {

/// Every family, each model.type once: the built-in ones, then those registered, in order.
/// References stay valid while the process runs.
const std::deque<ModelFamily>& model_families();

/// Adds `family` (every function of ModelFamily that is not marked "null where ..." set) and
/// lets configs name it in model.type; its keys are the common ones of `model`. Register before
/// configs that name it are loaded. A name taken, or a descriptor missing what every caller
/// needs, is a UserError.
void register_model_family(ModelFamily family);

/// The family `type` names (a name config validation accepted).
const ModelFamily& model_family(const std::string& type);

/// The family `config`'s model.type names.
const ModelFamily& model_family(const config::Config& config);

} // namespace xl::models
