#include "xl/train/init_from.h"

#include <fmt/format.h>

#include <filesystem>

#include "xl/config/config.h"
#include "xl/io/archive.h"
#include "xl/run/checkpoint.h"
#include "xl/run/run_dir.h"
#include "xl/train/parameter_groups.h"
#include "xl/util/error.h"

namespace xl::train {

std::string load_initial_weights(const config::Config& config, models::LanguageModelImpl& model) {
  std::filesystem::path path = *config.train.init_from;
  if (std::filesystem::is_directory(path)) {
    path = run::paths_of(path).best_checkpoint();
  }
  const auto excluded =
      parameters_named(config, model, config.train.init_exclude, "train.init_exclude");
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(path, archive);
  for (const auto& difference :
       run::config_differences(info.config, config::dump(config), {"model"})) {
    if (difference.rfind("model.type:", 0) == 0) {
      throw UserError(fmt::format(
          "train.init_from: {} holds another model family ({})", path.string(), difference));
    }
  }
  std::vector<std::string> left; // the parameters the checkpoint lacks, but the excluded
  try {
    left = io::read_module_matching(
        archive, "model", model, path.string(), {excluded.begin(), excluded.end()});
  } catch (const UserError& e) {
    const bool shapes = std::string(e.what()).find("other shapes") != std::string::npos;
    throw UserError(fmt::format(
        "train.init_from: {}{}",
        e.what(),
        shapes ? "\n  keep them fresh with train.init_exclude (their names, or patterns such as "
                 "\"crit.*\" for a new head), or start from a checkpoint of these sizes"
               : ""));
  }
  // The checkpoint's tensors this model has no place for (a head it lacks).
  std::vector<std::string> skipped;
  const auto params = model.named_parameters();
  const auto buffers = model.named_buffers();
  for (const auto& item : io::read_tensors(archive, "model")) {
    if (!params.contains(item.first) && !buffers.contains(item.first)) {
      skipped.push_back(item.first);
    }
  }
  // train.init_exclude ["*"] loaded nothing: the count wrapped below zero, silently.
  if (left.size() + excluded.size() >= params.size()) {
    throw UserError(fmt::format(
        "train.init_from: no parameter of {} is loaded (train.init_exclude names {} of {}, the "
        "checkpoint lacks {}); leave train.init_from out to start from fresh weights",
        path.string(),
        excluded.size(),
        params.size(),
        left.size()));
  }
  return fmt::format(
      "initialised from {} (step {}): {} of {} parameters loaded{}{}{}{}{}{}",
      path.string(),
      info.step,
      params.size() - left.size() - excluded.size(),
      params.size(),
      left.empty() ? "" : "; fresh, not in the checkpoint: ",
      fmt::join(left, ", "),
      excluded.empty() ? "" : "; fresh, train.init_exclude: ",
      fmt::join(excluded, ", "),
      skipped.empty() ? "" : "; skipped, not in this model: ",
      fmt::join(skipped, ", "));
}

} // namespace xl::train
