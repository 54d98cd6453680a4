#include "xl/app/average.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "xl/app/cli.h"
#include "xl/lab/average.h"
#include "xl/run/checkpoint.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/run_dir.h"
#include "xl/util/error.h"

namespace xl::app {

namespace {

namespace fs = std::filesystem;

// The file the average goes to: a name the trainer does not write, new unless --force.
fs::path average_file(const AverageRequest& request, const run::RunPaths& paths) {
  run::check_plain_name("--out", request.out);
  if (request.out.size() + 3 > 255) { // + ".pt"
    throw UserError(fmt::format(
        "--out: a name of {} bytes makes checkpoints/<name>.pt longer than a file name may be "
        "(255 bytes); choose a shorter one",
        request.out.size()));
  }
  if (run::written_by_trainer(request.out)) {
    throw UserError(fmt::format(
        "--out {}: the trainer writes checkpoints/{}.pt; name the average otherwise (e.g. "
        "averaged)",
        request.out,
        request.out));
  }
  auto out = paths.checkpoints / (request.out + ".pt");
  if (fs::exists(out) && !request.force) {
    throw UserError(fmt::format(
        "--out {}: {} exists; pass --force to replace it, or name the average otherwise",
        request.out,
        out.string()));
  }
  return out;
}

// --checkpoints by name or path, each once.
std::vector<fs::path> named_checkpoints(const AverageRequest& request, const run::RunPaths& paths) {
  std::vector<fs::path> inputs;
  for (const auto& name : request.checkpoints) {
    inputs.push_back(paths.checkpoint(name));
    const auto same = std::find_if(inputs.begin(), inputs.end() - 1, [&](const auto& earlier) {
      return fs::equivalent(earlier, inputs.back());
    });
    if (same != inputs.end() - 1) {
      throw UserError(fmt::format(
          "--checkpoints names {} twice ({} and {}): each checkpoint counts once",
          inputs.back().string(),
          request.checkpoints[static_cast<size_t>(same - inputs.begin())],
          name));
    }
  }
  return inputs;
}

// The run's snapshots, or the newest --last of them.
std::vector<fs::path> snapshots(const AverageRequest& request, const run::RunPaths& paths) {
  auto inputs = paths.snapshots();
  if (inputs.empty()) {
    throw UserError(fmt::format(
        "{} holds no snapshots (checkpoints/step_<S>.pt): train with "
        "train.keep_snapshots=N, or name checkpoints with --checkpoints",
        request.run_dir));
  }
  if (request.last && static_cast<size_t>(*request.last) > inputs.size()) {
    std::vector<std::string> held;
    for (const auto& input : inputs) {
      held.push_back(input.stem().string());
    }
    throw UserError(fmt::format(
        "--last {}: {} holds {} snapshots ({}); ask for at most that many",
        *request.last,
        request.run_dir,
        inputs.size(),
        fmt::join(held, ", ")));
  }
  if (request.last && static_cast<size_t>(*request.last) < inputs.size()) {
    inputs.erase(inputs.begin(), inputs.end() - static_cast<std::ptrdiff_t>(*request.last));
  }
  return inputs;
}

} // namespace

int run_average(const AverageRequest& given) {
  run::setup_logging("info");
  // --out names a checkpoint as --checkpoint does, without ".pt" (averaged.pt.pt before).
  AverageRequest request = given;
  if (request.out.size() > 3 && request.out.compare(request.out.size() - 3, 3, ".pt") == 0) {
    request.out.resize(request.out.size() - 3);
  }
  const run::RunPaths paths = run::paths_of(request.run_dir);
  const auto out = average_file(request, paths);
  const auto inputs =
      request.checkpoints.empty() ? snapshots(request, paths) : named_checkpoints(request, paths);
  if (std::find(inputs.begin(), inputs.end(), out) != inputs.end()) {
    throw UserError(
        fmt::format("--out {} would overwrite one of the checkpoints it averages", request.out));
  }
  lab::average_checkpoints(inputs, out);
  std::vector<std::string> names;
  for (const auto& input : inputs) {
    names.push_back(input.filename().string());
  }
  std::cout << fmt::format(
                   "averaged {} checkpoints ({}) into {}; evaluate with: {} --run {} "
                   "--checkpoint {}",
                   inputs.size(),
                   fmt::join(names, ", "),
                   out.string(),
                   app_command("xl-eval"),
                   shell_quote(request.run_dir),
                   shell_quote(request.out))
            << std::endl;
  return 0;
}

} // namespace xl::app
