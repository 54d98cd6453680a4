#include "xl/app/prep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/util/error.h"
#include "xl/util/log.h"
#include "xl/util/staged_folder.h"

namespace xl::app {

using prep::prep_formats;
using prep::PrepFormat;
using prep::PrepRequest;
using prep::PrepSplits;

namespace {

bool takes(const PrepFormat& format, const std::string& flag) {
  const auto flags = format.flags();
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

const PrepFormat& format_of(const PrepRequest& request) {
  for (const auto& format : prep_formats()) {
    if (format.name == request.format) {
      return format;
    }
  }
  std::vector<std::string> names;
  for (const auto& format : prep_formats()) {
    names.push_back(format.name);
  }
  throw UserError(fmt::format(
      "--format {}: no such format (one of {})", request.format, fmt::join(names, ", ")));
}

// A flag of another format would be ignored: refused, all alike.
void check_format_flags(const PrepRequest& request, const PrepFormat& format) {
  for (const auto& other : prep_formats()) {
    for (const auto& flag : other.flags()) {
      if (request.given.count(flag) == 0 || takes(format, flag)) {
        continue;
      }
      std::vector<std::string> takers;
      for (const auto& taker : prep_formats()) {
        if (takes(taker, flag)) {
          takers.push_back(taker.name);
        }
      }
      throw UserError(fmt::format(
          "{} applies to --format {} only, not to --format {}",
          flag,
          fmt::join(takers, " or "),
          request.format));
    }
  }
}

// An empty file name, and flags of the step a reused model or a given split skips, would be
// ignored: refused.
void check_flags(const PrepRequest& request) {
  for (const auto& [flag, value] :
       {std::pair{"--spm-model", &request.spm_model}, std::pair{"--vocab", &request.vocab}}) {
    if (request.given.count(flag) > 0 && value->empty()) {
      throw UserError(fmt::format(
          "{} '': name the file to reuse, or leave the flag out to build a new one", flag));
    }
  }
  const char* const spm = "they train a SentencePiece model, --spm-model reuses one";
  const char* const vocab = "they build a vocabulary, --vocab reuses one";
  for (const auto& [flag, instead, why] :
       {std::tuple{"--vocab-size", "--spm-model", spm},
        std::tuple{"--character-coverage", "--spm-model", spm},
        std::tuple{"--progress-seconds", "--spm-model", spm},
        std::tuple{
            "--holdout",
            "--valid",
            "--holdout makes the valid split of training reviews, "
            "--valid gives one"},
        std::tuple{"--vocab-from", "--vocab", vocab},
        std::tuple{"--unk", "--vocab", vocab},
        std::tuple{"--min-freq", "--vocab", vocab},
        std::tuple{"--max-size", "--vocab", vocab},
        std::tuple{"--tokenization", "--vocab", "--vocab's vocabulary records its own"}}) {
    if (request.given.count(flag) > 0 && request.given.count(instead) > 0) {
      throw UserError(fmt::format("{} and {} exclude each other: {}", flag, instead, why));
    }
  }
  if (request.given.count("--pretokenized") > 0 && request.given.count("--vocab") == 0) {
    throw UserError(
        "--pretokenized goes with --vocab: a vocabulary built here reads its splits as they "
        "stand");
  }
}

} // namespace

int run_prep(const PrepRequest& request) {
  const PrepFormat& format = format_of(request);
  check_format_flags(request, format);
  check_flags(request);
  run::setup_logging("info");
  PrepSplits splits;
  for (const auto& [name, path] :
       {std::pair{"train", request.train}, {"valid", request.valid}, {"test", request.test}}) {
    if (!path.empty()) {
      splits[name] = path;
    }
  }
  if (splits.empty()) {
    throw UserError("xl-prep has nothing to read: give --train, --valid or --test FILE");
  }
  if (request.holdout > 0 && splits.count("train") == 0) {
    throw UserError("--holdout carves the valid split out of --train FILE: give it");
  }
  run::check_output_folder("--out", request.out, true);
  // Written beside --out, then swapped in whole: a kill leaves the old folder or the new one.
  // Its lock is taken first, so that a second xl-prep into --out is refused, and the files
  // checked next are the ones this one replaces.
  StagedFolder staged(request.out, "xl-prep --out");
  // Every file it will write is checked before anything is read: the folder may hold other
  // formats' files (nsmc's .txt beside xlnet's .pieces), never one it replaces unasked.
  for (const auto& file : format.outputs(request, splits)) {
    run::check_output_file(
        "--out", (std::filesystem::path(request.out) / file).string(), request.force);
  }
  PrepRequest staged_request = request;
  staged_request.out = staged.path().string();
  format.prepare(staged_request, splits);
  std::error_code ec;
  const auto here = std::filesystem::current_path(ec);
  const auto out = std::filesystem::weakly_canonical(request.out, ec);
  const auto inside = here.lexically_relative(out);
  const bool strands =
      std::filesystem::exists(out, ec) && !inside.empty() && *inside.begin() != "..";
  staged.commit();
  logger().info("wrote {}", request.out);
  if (strands) {
    logger().warn(
        "{} was replaced by a new folder of the same name: a shell working inside the old one "
        "sees it removed (cd {} again to see the new files)",
        request.out,
        out.string());
  }
  return 0;
}

} // namespace xl::app
