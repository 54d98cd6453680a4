#include "xl/infer/documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "xl/eval/setup.h"
#include "xl/infer/scorer.h"
#include "xl/util/error.h"

namespace xl::infer {

namespace {

std::string document_name(size_t i) {
  return fmt::format("document {}", i);
}

// The documents of `group` side by side, or each alone where the run cannot batch them.
void score_group(
    const TrainedRun& run,
    const std::vector<size_t>& group,
    const std::vector<std::shared_ptr<const formats::Tokens>>& tokens,
    const std::vector<std::string>& texts,
    bool pretokenized,
    std::vector<DocumentScore>& scores) {
  std::vector<const formats::Tokens*> rows;
  for (const size_t i : group) {
    rows.push_back(tokens[i].get());
  }
  auto batches = run.data().document_batches(rows);
  if (!batches.source) {
    for (const size_t i : group) {
      const auto scored =
          score_text(run, {std::nullopt, texts[i], document_name(i), {pretokenized}}, {});
      scores[i].tokens = scored.result.tokens();
      scores[i].nll = scored.result.headline().sum;
      scores[i].qualifier = scored.result.qualifier;
    }
    return;
  }
  auto setup = eval::eval_setup(run.config(), std::move(batches), false, run.device());
  setup.options.progress_seconds = 0.0;
  setup.options.log_probs = true;
  std::vector<double> sums(group.size(), 0.0);
  std::vector<int64_t> counts(group.size(), 0);
  // Each row's log-probabilities summed over its counted targets: a document's own total.
  setup.options.on_output = [&](const sources::Batch& batch, const models::ModelOutput& out) {
    const auto counted = batch.target_mask;
    const auto row_sums = out.log_probs.to(torch::kCPU, torch::kDouble)
                              .masked_fill(counted.logical_not(), 0.0)
                              .sum(0);
    const auto row_counts = counted.sum(0);
    const auto s = row_sums.accessor<double, 1>();
    const auto n = row_counts.accessor<int64_t, 1>();
    for (size_t r = 0; r < group.size(); ++r) {
      sums[r] += s[static_cast<int64_t>(r)];
      counts[r] += n[static_cast<int64_t>(r)];
    }
  };
  {
    const auto lock = run.graph_lock();
    eval::evaluate(run.model(), *setup.source, setup.options);
  }
  for (size_t r = 0; r < group.size(); ++r) {
    scores[group[r]].tokens = counts[r];
    scores[group[r]].nll = -sums[r];
  }
}

// The documents read, and those of at least 2 tokens in groups of `batch`, longest first, so
// that a group's documents have similar lengths (little padding).
struct Groups {
  std::vector<std::shared_ptr<const formats::Tokens>> tokens;
  std::vector<std::vector<size_t>> groups;
};

Groups read_documents(
    const TrainedRun& run,
    const std::vector<std::string>& texts,
    const DocumentOptions& options,
    std::vector<DocumentScore>& scores) {
  Groups out;
  out.tokens.resize(texts.size());
  std::vector<size_t> scored;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].find_first_not_of(" \t\r\n\v\f") == std::string::npos) {
      continue; // no text: nothing to read, nothing to score
    }
    sources::TextReading reading;
    out.tokens[i] = sources::read_user_text(
        {std::nullopt, texts[i], document_name(i), {options.pretokenized}},
        run.tokenizer(),
        reading);
    scores[i].count = reading.count;
    if (out.tokens[i]->size() >= 2) {
      scored.push_back(i);
    }
  }
  std::stable_sort(scored.begin(), scored.end(), [&](size_t a, size_t b) {
    return out.tokens[a]->size() > out.tokens[b]->size();
  });
  const auto size = static_cast<size_t>(options.batch);
  for (size_t at = 0; at < scored.size(); at += size) {
    const auto end = std::min(scored.size(), at + size);
    out.groups.emplace_back(
        scored.begin() + static_cast<std::ptrdiff_t>(at),
        scored.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

// Calls `work(g)` for every group, `sessions` threads at once; false when `stop` stopped it. The
// first exception a thread met is thrown here.
bool in_sessions(
    size_t groups,
    int64_t sessions,
    const std::function<bool()>& stop,
    const std::function<void(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  std::exception_ptr failed;
  std::mutex failure;
  const auto session = [&] {
    for (size_t g = next++; g < groups && !stopped; g = next++) {
      if (stop && stop()) {
        stopped = true;
        return;
      }
      try {
        work(g);
      } catch (...) {
        const std::lock_guard<std::mutex> held(failure);
        failed = failed ? failed : std::current_exception();
        stopped = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t s = 1; s < std::min<size_t>(static_cast<size_t>(sessions), groups); ++s) {
    threads.emplace_back(session);
  }
  session();
  for (auto& thread : threads) {
    thread.join();
  }
  if (failed) {
    std::rethrow_exception(failed);
  }
  return !stopped;
}

} // namespace

std::optional<std::vector<DocumentScore>> score_documents(
    const TrainedRun& run,
    const std::vector<std::string>& texts,
    const DocumentOptions& options,
    const std::string& classifier_call) {
  if (run.classifier()) {
    throw UserError(fmt::format(
        "{} is a classifier: documents are scored by language models; {} gives a classifier's "
        "predictions",
        run.paths().dir.string(),
        classifier_call));
  }
  TORCH_CHECK(options.batch >= 1 && options.sessions >= 1, "documents need batch, sessions >= 1");
  std::vector<DocumentScore> scores(texts.size());
  const Groups read = read_documents(run, texts, options, scores);
  const bool done = in_sessions(read.groups.size(), options.sessions, options.stop, [&](size_t g) {
    score_group(run, read.groups[g], read.tokens, texts, options.pretokenized, scores);
  });
  if (!done) {
    return std::nullopt;
  }
  return scores;
}

} // namespace xl::infer
