#include "xl/eval/per_token.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <vector>

#include "xl/run/outputs.h"
#include "xl/run/progress.h"
#include "xl/util/files.h"
#include "xl/util/log.h"
#include "xl/util/utf8.h"

namespace xl::eval {

namespace {

constexpr const char* kHeader = "index\ttoken\tlog_prob\n";
constexpr const char* kHeaderWithOrigins = "index\ttoken\tlog_prob\toffset\ttext\n";
// Tokens listed per read of the scratch space.
constexpr int64_t kBlock = 1 << 16;

std::string row(
    int64_t index,
    const std::string& token,
    float log_prob,
    const formats::TokenOrigin* origin) {
  std::string out = std::isnan(log_prob)
      ? fmt::format("{}\t{}\t", index, tsv_field(token))
      : fmt::format("{}\t{}\t{:.6f}", index, tsv_field(token), log_prob);
  if (origin != nullptr) {
    out += fmt::format("\t{}\t{}", origin->offset, tsv_field(origin->text));
  }
  return out + "\n";
}

// Beside the file, on its disk (its folder may be made only when it is written); a device's, or
// a file's in a folder not made yet, in the scratch folder.
std::filesystem::path scratch_beside(const std::filesystem::path& out) {
  const auto folder = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  return run::writes_through(out) || !std::filesystem::is_directory(folder, ec) ? scratch_dir()
                                                                                : folder;
}

} // namespace

std::string tsv_field(const std::string& text) {
  // A field that is no UTF-8 on its own (one byte of a character) is shown by its bytes.
  const bool utf8 = check_utf8(text).invalid == 0;
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (byte < 0x20 || byte == 0x7f || (!utf8 && byte >= 0x80)) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

PerTokenListing::PerTokenListing(
    std::optional<std::filesystem::path> out,
    const formats::Tokens* tokens,
    std::function<std::string(int64_t)> token_text)
    : out_(std::move(out)),
      tokens_(tokens),
      token_text_(std::move(token_text)),
      scratch_(
          out_ ? std::make_unique<ScratchFile>(
                     scratch_beside(*out_),
                     "--per-token " + out_->string())
               : std::make_unique<ScratchFile>(ScratchFile::in_memory("each token's score"))) {
  if (tokens_ == nullptr) {
    return;
  }
  // Every token starts unscored.
  const std::vector<float> unscored(kBlock, std::numeric_limits<float>::quiet_NaN());
  for (int64_t at = 0; at < tokens_->size(); at += kBlock) {
    const int64_t n = std::min(kBlock, tokens_->size() - at);
    scratch_->append(unscored.data(), static_cast<size_t>(n) * sizeof(float));
  }
}

void PerTokenListing::add(const sources::Batch& batch, const torch::Tensor& log_probs) {
  TORCH_CHECK(
      batch.target_index.defined() && batch.target_index.sizes() == log_probs.sizes(),
      "per-token scores need the targets' positions: target_index ",
      batch.target_index.defined() ? batch.target_index.sizes() : c10::IntArrayRef{},
      ", log-probs ",
      log_probs.sizes());
  const auto index = batch.target_index.contiguous();
  const auto scores = log_probs.contiguous();
  const auto* at = index.data_ptr<int64_t>();
  const auto* lp = scores.data_ptr<float>();
  const bool* counted = nullptr;
  torch::Tensor mask;
  if (batch.target_mask.defined()) {
    mask = batch.target_mask.contiguous();
    counted = mask.data_ptr<bool>();
  }
  torch::Tensor target_ids;
  const int64_t* targets = nullptr;
  if (tokens_ == nullptr) {
    target_ids = batch.targets.contiguous();
    targets = target_ids.data_ptr<int64_t>();
  }
  std::vector<Scored> scored;
  for (int64_t i = 0; i < index.numel(); ++i) {
    if (at[i] < 0 || (counted != nullptr && !counted[i])) {
      continue; // padding
    }
    if (tokens_ != nullptr) {
      scratch_->write_at(static_cast<uint64_t>(at[i]) * sizeof(float), &lp[i], sizeof(float));
    } else {
      scored.push_back({at[i], targets[i], lp[i], 0.0F});
    }
  }
  if (!scored.empty()) {
    scratch_->append(scored.data(), scored.size() * sizeof(Scored));
    rows_ += static_cast<int64_t>(scored.size());
  }
}

int64_t PerTokenListing::each_row(const RowSink& sink, double progress_seconds) const {
  const int64_t total = tokens_ != nullptr ? tokens_->size() : rows_;
  run::Progress progress(total);
  std::vector<float> scores(kBlock);
  std::vector<Scored> scored(kBlock);
  for (int64_t first = 0; first < total; first += kBlock) {
    const int64_t n = std::min(kBlock, total - first);
    if (tokens_ != nullptr) {
      scratch_->read_at(
          static_cast<uint64_t>(first) * sizeof(float),
          scores.data(),
          static_cast<size_t>(n) * sizeof(float));
      const auto ids = tokens_->slice(first, n);
      const auto* id = ids.data_ptr<int64_t>();
      const auto origins =
          tokens_->has_origins() ? tokens_->origins(first, n) : std::vector<formats::TokenOrigin>{};
      for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        sink(first + i, token_text_(id[i]), scores[k], origins.empty() ? nullptr : &origins[k]);
      }
    } else {
      scratch_->read_at(
          static_cast<uint64_t>(first) * sizeof(Scored),
          scored.data(),
          static_cast<size_t>(n) * sizeof(Scored));
      for (int64_t i = 0; i < n; ++i) {
        const Scored& s = scored[static_cast<size_t>(i)];
        sink(s.index, token_text_(s.id), s.log_prob, nullptr);
      }
    }
    progress.update(first + n, n);
    if (progress_seconds > 0 && progress.due(progress_seconds)) {
      logger().info("{}", progress.line("--per-token row"));
    }
  }
  return total;
}

int64_t PerTokenListing::write(double progress_seconds) const {
  TORCH_CHECK(out_, "a listing kept in memory is read with each_row(), not written");
  int64_t rows = 0;
  run::write_output("--per-token", *out_, [&](const ByteSink& sink) {
    const char* header =
        tokens_ != nullptr && tokens_->has_origins() ? kHeaderWithOrigins : kHeader;
    sink(header, std::char_traits<char>::length(header));
    std::string lines;
    rows = each_row(
        [&](int64_t index,
            const std::string& token,
            float log_prob,
            const formats::TokenOrigin* origin) {
          lines += row(index, token, log_prob, origin);
          if (lines.size() >= (1U << 20)) {
            sink(lines.data(), lines.size());
            lines.clear();
          }
        },
        progress_seconds);
    sink(lines.data(), lines.size());
  });
  return rows;
}

} // namespace xl::eval
