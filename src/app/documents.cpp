#include "xl/app/documents.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "xl/eval/report.h"
#include "xl/formats/document_reader.h"
#include "xl/infer/documents.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/progress.h"
#include "xl/runtime/device.h"
#include "xl/runtime/signals.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::app {

namespace {

namespace fs = std::filesystem;

// The input is scored a window of places at a time, documents of a window grouped by length.
// Windows sit at fixed places, so that a shard, a resumed run and a whole run put the same
// documents in the same groups: the same numbers, bit for bit.
constexpr int64_t kWindow = 512;
// Bad lines named one by one, then counted.
constexpr int64_t kBadNamed = 20;

// The place after the last whole line of an interrupted --out (a torn line a kill left is cut
// off), or nothing for an output without lines.
std::optional<int64_t> resume_after(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) {
    return std::nullopt;
  }
  const std::string text = read_file(out, "--out");
  const size_t end = text.rfind('\n');
  if (end == std::string::npos) {
    fs::resize_file(out, 0);
    return std::nullopt;
  }
  if (end + 1 < text.size()) {
    logger().warn("{}: a torn last line (an interrupted write) cut off", out.string());
    fs::resize_file(out, end + 1);
  }
  const size_t start = text.rfind('\n', end - 1);
  const auto line = text.substr(
      start == std::string::npos ? 0 : start + 1,
      end - (start == std::string::npos ? 0 : start + 1));
  try {
    return nlohmann::json::parse(line).at("index").get<int64_t>() + 1;
  } catch (const nlohmann::json::exception&) {
    throw UserError(fmt::format(
        "--resume: the last line of {} is no line of xl-eval --documents (no \"index\"): is it "
        "the right file?",
        out.string()));
  }
}

// Appends whole windows of lines, each flushed to the disk before the next is scored: a kill
// loses at most the window at hand. The file is opened (its folder made) at the first window,
// so that an input refused on the way leaves an earlier output as it was.
class LineWriter {
 public:
  LineWriter(std::optional<fs::path> out, bool append)
      : out_(std::move(out)),
        append_(append),
        // A device or a descriptor is written into as it is: appended, never synced.
        through_(!out_ || run::writes_through(*out_)) {}
  ~LineWriter() {
    if (out_ && file_ != nullptr) {
      std::fclose(file_);
    }
  }
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  void write(const std::string& lines) {
    if (lines.empty()) {
      return;
    }
    if (file_ == nullptr) {
      file_ = open();
    }
    if (std::fwrite(lines.data(), 1, lines.size(), file_) != lines.size() ||
        std::fflush(file_) != 0 || (!through_ && ::fsync(::fileno(file_)) != 0)) {
      throw UserError(fmt::format(
          "cannot write {}: {}", out_ ? out_->string() : "stdout", std::strerror(errno)));
    }
  }

 private:
  std::FILE* open() const {
    if (!out_) {
      return stdout;
    }
    if (!through_ && out_->has_parent_path()) {
      run::create_output_folder("--out", out_->parent_path());
    }
    std::FILE* file = through_ ? ::fdopen(run::open_through("--out", *out_), "ab")
                               : std::fopen(out_->c_str(), append_ ? "ab" : "wb");
    if (file == nullptr) {
      throw UserError(
          fmt::format("cannot write --out {}: {}", out_->string(), std::strerror(errno)));
    }
    return file;
  }

  std::optional<fs::path> out_;
  bool append_;
  bool through_;
  std::FILE* file_ = nullptr;
};

// A document's line.
std::string document_line(
    const formats::Document& document,
    const infer::DocumentScore& score,
    formats::VocabKind unit) {
  nlohmann::json line{{"index", document.index}, {"id", document.id}, {"tokens", score.tokens}};
  const auto metric = eval::metric(
      {"lm", models::TermKind::kTokenNll, 1.0, score.nll, score.tokens}, unit, score.qualifier);
  if (score.tokens > 0 && metric) {
    line["loss"] = score.loss();
    line[metric->name] = metric->value;
  } else {
    line["loss"] = nullptr;
    line["note"] = "fewer than 2 tokens: nothing to score";
  }
  line["units"] = score.count.units;
  line["unknown"] = score.count.unknown;
  return line.dump() + "\n";
}

// The totals of the documents written, for the summary.
struct Totals {
  /// seconds spent reading, scoring and writing
  double seconds = 0.0;
  int64_t documents = 0;
  int64_t unscored = 0;
  int64_t tokens = 0;
  double nll = 0.0;
  int64_t bad = 0;
  std::string qualifier;
};

// The places of the input this process scores, [first, end), and the first not yet written.
struct Range {
  int64_t first = 0;
  int64_t end = 0;
  int64_t start = 0;
};

Range places_of(
    const formats::DocumentReader& reader,
    const DocumentsRequest& request,
    const std::optional<fs::path>& out) {
  const int64_t windows = (reader.size() + kWindow - 1) / kWindow;
  Range range;
  range.first = (request.shard - 1) * windows / request.shards * kWindow;
  range.end = std::min(reader.size(), request.shard * windows / request.shards * kWindow);
  range.start = range.first;
  if (request.resume) {
    range.start = std::max(range.first, resume_after(*out).value_or(range.first));
    if (range.start > range.first) {
      logger().info(
          "{} holds the documents before place {}: going on from there",
          out->string(),
          range.start);
    }
  }
  return range;
}

// The documents of the input from the window of `start` on, a window at a time.
class Windows {
 public:
  Windows(formats::DocumentReader& reader, const Range& range) : reader_(reader), range_(range) {
    reader_.seek(range.start / kWindow * kWindow);
  }

  // The documents of the window ending before `stop`; the lines that are none named, up to
  // kBadNamed, and counted in `bad`.
  std::vector<formats::Document> next(int64_t stop, int64_t& bad) {
    std::vector<formats::Document> documents;
    std::vector<formats::BadDocument> none;
    while (pending_ || (pending_ = reader_.next(none))) {
      if (pending_->index >= stop) {
        break;
      }
      documents.push_back(std::move(*pending_));
      pending_.reset();
    }
    for (const auto& b : none) {
      if (b.index >= range_.start && b.index < range_.end && bad++ < kBadNamed) {
        logger().warn("{}: {}: skipped", b.where, b.why);
      }
    }
    return documents;
  }

 private:
  formats::DocumentReader& reader_;
  Range range_;
  std::optional<formats::Document> pending_;
};

// "<input> | N documents | T tokens | loss .. | ppl .." and what was left out or stopped.
std::string summary_of(
    const DocumentsRequest& request,
    const Totals& totals,
    formats::VocabKind unit,
    bool stopped,
    int signal) {
  const auto metric = eval::metric(
      {"lm", models::TermKind::kTokenNll, 1.0, totals.nll, totals.tokens}, unit, totals.qualifier);
  std::string summary = fmt::format(
      "{} | {} documents | {} tokens | {:.2f} s, {:.1f} doc/s",
      request.documents,
      totals.documents,
      totals.tokens,
      totals.seconds,
      static_cast<double>(totals.documents) / std::max(totals.seconds, 1e-9));
  if (totals.tokens > 0 && metric) {
    summary += fmt::format(
        " | loss {:.4f} | {} {:.3f} (over all tokens)",
        totals.nll / static_cast<double>(totals.tokens),
        metric->name,
        metric->value);
  }
  if (totals.unscored > 0) {
    summary += fmt::format(" | {} with fewer than 2 tokens (no score)", totals.unscored);
  }
  if (totals.bad > 0) {
    summary += fmt::format(" | {} lines skipped (no document: see the warnings)", totals.bad);
  }
  if (stopped) {
    summary += fmt::format(
        " | PARTIAL: stopped by signal {}; {} continues after the last line",
        signal,
        request.out ? "--resume" : "nothing (no --out)");
  }
  return summary;
}

// The lines of the documents of a window not written before, their totals added up.
std::string lines_of(
    const std::vector<formats::Document>& documents,
    const std::vector<infer::DocumentScore>& scores,
    int64_t start,
    formats::VocabKind unit,
    Totals& totals) {
  std::string lines;
  for (size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].index < start) {
      continue; // written before the interruption
    }
    const auto& score = scores[i];
    lines += document_line(documents[i], score, unit);
    ++totals.documents;
    totals.unscored += score.tokens == 0 ? 1 : 0;
    totals.tokens += score.tokens;
    totals.nll += score.nll;
    totals.qualifier = score.qualifier;
  }
  return lines;
}

// The run, a signal from here on stopping the scoring between two groups.
std::shared_ptr<const infer::TrainedRun> open_run(
    const config::Config& config,
    const DocumentsRequest& request,
    const formats::DocumentReader& reader,
    const Range& range) {
  runtime::setup_runtime(config.train);
  runtime::install_stop_handlers();
  infer::OpenOptions open;
  open.checkpoint = request.checkpoint;
  open.enforce_memory = request.enforce_memory;
  auto run = infer::TrainedRun::open(config, request.run_dir, open);
  logger().info(
      "scoring {} ({}, places {} to {} of {}) with {} (step {}): {} documents side by side, "
      "{} session{}",
      request.documents,
      reader.format(),
      range.start,
      range.end,
      reader.size(),
      run->checkpoint().string(),
      run->step(),
      config.eval.batch_size,
      request.sessions,
      request.sessions == 1 ? "" : "s");
  return run;
}

// Window by window: read, score, write in the input's order; false when a signal stopped it.
bool score_windows(
    const config::Config& config,
    const infer::TrainedRun& run,
    formats::DocumentReader& reader,
    const Range& range,
    const DocumentsRequest& request,
    LineWriter& writer,
    Totals& totals) {
  run::Progress progress(range.end - range.first, range.start - range.first);
  progress.count_as("doc");
  infer::DocumentOptions options;
  options.batch = config.eval.batch_size;
  options.sessions = request.sessions;
  options.pretokenized = request.pretokenized;
  options.stop = [] { return runtime::stop_signal().load() != 0; };
  Windows windows(reader, range);
  for (int64_t at = range.start / kWindow * kWindow; at < range.end; at += kWindow) {
    const int64_t stop = std::min(range.end, at + kWindow);
    const auto documents = windows.next(stop, totals.bad);
    std::vector<std::string> texts;
    for (const auto& d : documents) {
      texts.push_back(d.text);
    }
    const auto scores = infer::score_documents(run, texts, options, "xl-predict");
    if (!scores) {
      return false;
    }
    writer.write(lines_of(documents, *scores, range.start, run.data().unit(), totals));
    progress.update(stop - range.first, static_cast<int64_t>(documents.size()));
    if (progress.due(config.run.progress_seconds) || stop == range.end) {
      logger().info("{}", progress.line("place"));
    }
  }
  return true;
}

} // namespace

int run_documents(const config::Config& config, const DocumentsRequest& request) {
  // 1. The outputs are checked before anything is read; --resume continues the one there.
  run::setup_logging(config.run.log_level);
  run::OutputFiles files(request.force || request.resume);
  files.add_input("--documents", request.documents);
  const auto out = files.add("--out", request.out);
  if (request.resume && (!out || run::writes_through(*out))) {
    throw UserError(fmt::format(
        "--resume continues the file --out names{}",
        out ? fmt::format(", and {} is a device or a descriptor, not a file", out->string())
            : ": give --out"));
  }
  formats::DocumentReader reader(request.documents, request.format);
  const Range range = places_of(reader, request, out);
  // 2. The model.
  const auto run = open_run(config, request, reader, range);
  // 3. The documents.
  LineWriter writer(out, request.resume);
  Totals totals;
  const auto began = std::chrono::steady_clock::now();
  const bool stopped = !score_windows(config, *run, reader, range, request, writer, totals);
  totals.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (!stopped && totals.documents == 0 && range.start == range.first && range.end > range.first) {
    const char* unit = reader.format() == "folder" ? "file" : "line";
    throw UserError(fmt::format(
        "--documents {}: no document could be read ({}){}",
        request.documents,
        totals.bad > 0
            ? fmt::format(
                  "{} {}{} skipped: see the warnings", totals.bad, unit, totals.bad == 1 ? "" : "s")
            : fmt::format("its {}s are blank", unit),
        reader.format() == "jsonl" ? "; a JSONL line is an object with a \"text\" string" : ""));
  }
  // 4. The summary: on stdout after --out, else in the log.
  const int signal = runtime::stop_signal().load();
  const auto summary = summary_of(request, totals, run->data().unit(), stopped, signal);
  if (out) {
    std::cout << summary << std::endl;
  } else {
    logger().info("{}", summary);
  }
  return stopped ? 128 + signal : 0;
}

} // namespace xl::app
