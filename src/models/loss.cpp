#include "xl/models/loss.h"

namespace xl::models {

namespace {

void check_same_terms(const std::vector<TermTotal>& totals, const std::vector<std::string>& names) {
  bool same = totals.size() == names.size();
  for (size_t i = 0; same && i < names.size(); ++i) {
    same = totals[i].name == names[i];
  }
  if (!same) {
    std::string seen;
    for (const auto& t : totals) {
      seen += " " + t.name;
    }
    std::string now;
    for (const auto& n : names) {
      now += " " + n;
    }
    TORCH_CHECK(false, "loss terms changed between batches: [", seen, " ] then [", now, " ]");
  }
}

std::vector<std::string> names_of(const std::vector<TermTotal>& totals) {
  std::vector<std::string> names;
  for (const auto& t : totals) {
    names.push_back(t.name);
  }
  return names;
}

} // namespace

void accumulate(std::vector<TermTotal>& totals, const std::vector<TermTotal>& more) {
  if (totals.empty()) {
    totals = more;
    return;
  }
  check_same_terms(totals, names_of(more));
  for (size_t i = 0; i < more.size(); ++i) {
    totals[i].sum += more[i].sum;
    totals[i].count += more[i].count;
  }
}

std::vector<TermTotal> totals_of(
    const std::vector<LossTerm>& terms,
    const std::vector<double>& sums) {
  TORCH_CHECK(terms.size() == sums.size(), terms.size(), " terms but ", sums.size(), " sums");
  std::vector<TermTotal> totals;
  totals.reserve(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    totals.push_back({terms[i].name, terms[i].kind, terms[i].weight, sums[i], terms[i].count});
  }
  return totals;
}

void TermAccumulator::add(const std::vector<LossTerm>& terms) {
  TORCH_CHECK(!terms.empty(), "a model output without loss terms");
  std::vector<torch::Tensor> sums;
  sums.reserve(terms.size());
  for (const auto& t : terms) {
    sums.push_back(t.sum.detach().to(torch::kDouble).reshape({}));
  }
  const auto stacked = torch::stack(sums);
  // Host side: names, kinds, weights and counts; the sums stay on the device.
  auto counted = totals_of(terms, std::vector<double>(terms.size(), 0.0));
  accumulate(meta_, counted);
  sums_ = sums_.defined() ? sums_ + stacked : stacked;
}

std::vector<TermTotal> TermAccumulator::totals() const {
  std::vector<TermTotal> out = meta_;
  if (!sums_.defined()) {
    return out;
  }
  const auto host = sums_.cpu();
  const auto* values = host.data_ptr<double>();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].sum = values[i];
  }
  return out;
}

} // namespace xl::models
