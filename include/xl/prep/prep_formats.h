// The formats xl-prep writes, as data: each format with its files and how it writes them, and
// every flag a format takes described (its value, the formats that take it, the flags it needs
// or excludes). The only place that lists them: a new tokenizer edits src/prep/ alone, and
// app/prep.cpp turns the descriptions into the command line and checks them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace xl::prep {

/// What xl-prep was asked: the splits, the folder, the format and the values of its flags.
struct PrepRequest {
  /// a registered format's name (prep_formats())
  std::string format = "word";
  /// the splits' text files (empty: no such split)
  std::string train;
  std::string valid;
  std::string test;
  /// the folder to write
  std::string out;
  /// replace the files of an earlier xl-prep in `out`
  bool force = false;
  /// the values of the formats' flags given, by name ("--min-freq" -> "2"; a switch: "true")
  std::map<std::string, std::string> values;
  /// every flag the command line gave, the common ones too ("--train")
  std::set<std::string> given;

  /// `flag`'s value, or `otherwise` where it was not given
  std::string text(const std::string& flag, const std::string& otherwise = "") const;
  /// `flag`'s value read as an integer, or `otherwise` (a UserError for a value that is none)
  int64_t count(const std::string& flag, int64_t otherwise) const;
  /// `flag`'s value read as a number, or `otherwise`
  double number(const std::string& flag, double otherwise) const;
  /// whether the switch `flag` was given
  bool on(const std::string& flag) const;
};

/// The named splits of a request ("train", "valid", "test") and their text files.
using PrepSplits = std::map<std::string, std::filesystem::path>;

/// Another flag that a flag needs, or that it cannot go with, and why.
struct PrepFlagRule {
  /// true: `flag` is needed; false: `flag` is refused beside it
  bool needs = false;
  std::string flag;
  std::string why;
};

/// A flag that some formats take.
struct PrepFlag {
  enum class Value {
    kSwitch, ///< given or not
    kFile,   ///< a file's name, never empty
    kText,   ///< one of `choices`
    kCount,  ///< an integer >= `low`
    kNumber, ///< a finite number, from `low` to `high` where low < high
  };
  /// "--min-freq"
  std::string name;
  /// the formats that take it
  std::vector<std::string> formats;
  Value value = Value::kSwitch;
  /// what it does, for --help
  std::string help;
  /// what the format does without it, for --help ("": nothing to show)
  std::string default_value;
  /// the flags it needs or excludes
  std::vector<PrepFlagRule> rules;
  /// kText: the values it takes
  std::vector<std::string> choices;
  /// kCount: the least count; kNumber: the range (none where low >= high: the format checks it)
  double low = 0.0;
  double high = 0.0;
};

/// One kind of prepared data: what --format names, the files it writes and how.
struct PrepFormat {
  /// --format's value
  std::string name;
  /// a former name that --format still takes, with a notice ("": none)
  std::string former_name;
  /// what it reads and writes, for --help
  std::string help;
  /// the files it writes into --out (the vocabulary's too, unless it is reused from there)
  std::vector<std::string> (*outputs)(const PrepRequest& request, const PrepSplits& splits) =
      nullptr;
  /// writes them
  void (*prepare)(const PrepRequest& request, const PrepSplits& splits) = nullptr;

  /// whether `flag` is one of its own
  bool takes(const PrepFlag& flag) const;
};

/// Every format, in --help's order: word, byte, pieces, nsmc.
const std::vector<PrepFormat>& prep_formats();

/// Every flag of the formats, each once, in --help's order.
const std::vector<PrepFlag>& prep_flags();

/// The format `name` names, by its name or its former one (logging a notice); a UserError that
/// lists the names for none.
const PrepFormat& prep_format(const std::string& name);

} // namespace xl::prep
