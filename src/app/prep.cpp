#include "xl/app/prep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>
#include <vector>

#include "xl/app/flag_checks.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/util/error.h"
#include "xl/util/log.h"
#include "xl/util/staged_folder.h"

namespace xl::app {

using prep::prep_flags;
using prep::prep_formats;
using prep::PrepFlag;
using prep::PrepFormat;
using prep::PrepRequest;
using prep::PrepSplits;

namespace {

// What --format takes: each format's name and what it writes, for --help.
void add_format_flag(CLI::App& app, PrepRequest& request) {
  std::vector<std::string> names;
  std::vector<std::string> taken; // the former names too, not shown
  std::vector<std::string> help;
  for (const auto& format : prep_formats()) {
    help.push_back(format.name + " (" + format.help + ")");
    names.push_back(format.name);
    taken.push_back(format.name);
    if (!format.former_name.empty()) {
      taken.push_back(format.former_name);
    }
  }
  app.add_option("--format", request.format, fmt::format("{}", fmt::join(help, ", ")))
      ->check(CLI::IsMember(taken).description(fmt::format("{{{}}}", fmt::join(names, ","))));
}

// A format's flag on the command line: its value kept by name in request.values, checked as its
// description says.
void add_format_flag(CLI::App& app, PrepRequest& request, const PrepFlag& flag) {
  const std::string help = fmt::format("{}: {}", fmt::join(flag.formats, ", "), flag.help);
  const std::string name = flag.name;
  if (flag.value == PrepFlag::Value::kSwitch) {
    app.add_flag_callback(
        name, [&request, name] { request.values[name] = "true"; }, help);
    return;
  }
  auto* option = app.add_option_function<std::string>(
      name, [&request, name](const std::string& value) { request.values[name] = value; }, help);
  option->default_str(flag.default_value);
  switch (flag.value) {
    case PrepFlag::Value::kFile:
      option->type_name("FILE");
      break;
    case PrepFlag::Value::kText:
      option->check(CLI::IsMember(flag.choices));
      break;
    case PrepFlag::Value::kCount:
      option->type_name("INT")->check(count_from(static_cast<int64_t>(flag.low)));
      break;
    case PrepFlag::Value::kNumber:
      option->type_name("FLOAT")->check(
          flag.low < flag.high ? number_between(flag.low, flag.high) : finite_number());
      break;
    case PrepFlag::Value::kSwitch:
      break;
  }
}

// A flag of another format would be ignored: refused, all alike.
void check_format_flags(const PrepRequest& request, const PrepFormat& format) {
  for (const auto& flag : prep_flags()) {
    if (request.given.count(flag.name) == 0 || format.takes(flag)) {
      continue;
    }
    throw UserError(fmt::format(
        "{} applies to --format {} only, not to --format {}",
        flag.name,
        fmt::join(flag.formats, " or "),
        format.name));
  }
}

// An empty file name, a flag without the one it needs, and flags of the step that a reused
// model or a given split skips, would be ignored: refused.
void check_flag_rules(const PrepRequest& request) {
  for (const auto& flag : prep_flags()) {
    if (request.given.count(flag.name) == 0) {
      continue;
    }
    if (flag.value == PrepFlag::Value::kFile && request.text(flag.name).empty()) {
      throw UserError(fmt::format(
          "{} '': name the file to reuse, or leave the flag out to build a new one", flag.name));
    }
    for (const auto& rule : flag.rules) {
      if (rule.needs && request.given.count(rule.flag) == 0) {
        throw UserError(fmt::format("{} goes with {}: {}", flag.name, rule.flag, rule.why));
      }
      if (!rule.needs && request.given.count(rule.flag) > 0) {
        throw UserError(
            fmt::format("{} and {} exclude each other: {}", flag.name, rule.flag, rule.why));
      }
    }
  }
}

} // namespace

void add_prep_flags(CLI::App& app, PrepRequest& request) {
  add_format_flag(app, request);
  app.add_option(
      "--train",
      request.train,
      "training text file (needed to build a vocabulary or train a model; not where a format's "
      "flag reuses one)");
  app.add_option("--valid", request.valid, "validation text file");
  app.add_option("--test", request.test, "test text file");
  app.add_option("--out", request.out, "output folder (vocab.txt, train.bin, ...)")->required();
  for (const auto& flag : prep_flags()) {
    add_format_flag(app, request, flag);
  }
  app.add_flag("--force", request.force, "replace the files of an earlier xl-prep in --out");
}

int run_prep(const PrepRequest& asked) {
  run::setup_logging("info");
  const PrepFormat& format = prep::prep_format(asked.format);
  PrepRequest request = asked;
  request.format = format.name; // its name, where a former one was given
  check_format_flags(request, format);
  check_flag_rules(request);
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
  run::check_output_folder("--out", request.out, true);
  // Written beside --out, then swapped in whole: a kill leaves the old folder or the new one.
  // Its lock is taken first, so that a second xl-prep into --out is refused, and the files
  // checked next are the ones this one replaces.
  StagedFolder staged(request.out, "xl-prep --out");
  // Every file it will write is checked before anything is read: the folder may hold other
  // formats' files (nsmc's .txt beside the .pieces of pieces), never one it replaces unasked.
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
