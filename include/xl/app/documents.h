// xl-eval --documents: every document of a corpus scored on its own, one JSON line each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xl/config/schema.h"

namespace xl::app {

struct DocumentsRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// JSONL with a "text" field, one document a line, or a folder of .txt files
  std::string documents;
  /// formats::kDocumentFormats
  std::string format = "auto";
  /// the JSONL file written (unset: stdout)
  std::optional<std::string> out;
  /// continue an --out an interrupted run left, after its last whole line
  bool resume = false;
  /// this process's part of the corpus, K of N (1-based), whose outputs concatenate in order
  int64_t shard = 1;
  int64_t shards = 1;
  /// groups of documents scored at once, each by a session of its own
  int64_t sessions = 1;
  /// the documents are tokenized already: split at blanks, not by the run's rules for raw text
  bool pretokenized = false;
  /// replace an existing --out
  bool force = false;
  bool enforce_memory = true;
};

/// Scores each document of request.documents on its own with a checkpoint of a language model
/// run and writes one JSON line per document, in the input's order: index, id, tokens, loss,
/// ppl or bpc, units, unknown. SIGINT or SIGTERM stop it between two groups, the lines of the
/// documents done kept (--resume continues). Returns the process exit status.
int run_documents(const config::Config& config, const DocumentsRequest& request);

} // namespace xl::app
