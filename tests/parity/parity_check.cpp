// xl-parity-check: compares xl's Transformer-XL or XLNet with the Hugging Face reference numbers
// that scripts/parity/transfo_xl.py or xlnet.py wrote for the same config, weights and batches.
// Prints the largest difference of each quantity and exits 0 when all are within the tolerance,
// 1 otherwise.
// scripts/parity/check.sh runs both sides:
//   scripts/parity/check.sh CONFIG [SEED] [--batch B] [--segments S] [--set key=value ...]
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "xl/app/cli.h"
#include "xl/app/flag_checks.h"
#include "xl/config/config.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf.h"
#include "xl/models/transformer_xl/model.h"
#include "xl/runtime/autocast.h"
#include "xl/runtime/device.h"
#include "xl/train/optimizer.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace {

using xl::models::HFTensor;
using xl::models::TransformerXLImpl;

struct Difference {
  std::string what;
  double max_abs = 0.0;
  bool ok = true;
  std::string where;
};

// max |a - b| and whether a ~ b within `tol` (absolute and relative).
Difference compare(
    const std::string& what,
    const torch::Tensor& a,
    const torch::Tensor& b,
    double tol,
    const std::string& where = "") {
  TORCH_CHECK(a.sizes() == b.sizes(), what, ": xl ", a.sizes(), ", reference ", b.sizes());
  const auto x = a.to(torch::kDouble);
  const auto y = b.to(torch::kDouble);
  Difference d{what, 0.0, true, where};
  if (x.numel() > 0) {
    d.max_abs = (x - y).abs().max().item<double>();
    d.ok = torch::allclose(x, y, tol, tol);
  }
  return d;
}

// The worst of many differences, named after the worst tensor.
Difference worst(const std::string& what, const std::vector<Difference>& parts) {
  Difference out{what, 0.0, true, ""};
  for (const auto& p : parts) {
    out.ok = out.ok && p.ok;
    if (p.max_abs >= out.max_abs) {
      out.max_abs = p.max_abs;
      out.where = p.what;
    }
  }
  return out;
}

xl::models::LanguageModel imported_model(
    const xl::config::Config& config,
    int64_t n_token,
    const xl::io::SafeTensors& weights,
    bool reverse_clusters = false) {
  auto model = xl::models::build_model(config, n_token);
  xl::models::HFImportOptions options;
  options.reverse_clusters = reverse_clusters;
  xl::models::import_hf(*model, weights, options);
  return model;
}

// Segment s: the reference's batch fields (XLNet), or tgt_len tokens of one long input
// (Transformer-XL).
xl::sources::Batch segment(const xl::io::SafeTensors& data, int64_t s, int64_t tgt_len) {
  xl::sources::Batch batch;
  const std::string prefix = fmt::format("batch_{}/", s);
  if (!data.contains(prefix + "tokens")) {
    batch.tokens = data.at("input").narrow(0, s * tgt_len, tgt_len);
    batch.targets = data.at("target").narrow(0, s * tgt_len, tgt_len);
    batch.n_targets = batch.targets.numel();
    return batch;
  }
  std::map<std::string, torch::Tensor> fields;
  for (const auto& name : data.names()) {
    if (name.rfind(prefix, 0) == 0) {
      fields.emplace(name.substr(prefix.size()), data.at(name));
    }
  }
  return xl::sources::batch_from_fields(fields);
}

// The memory segment 0 starts from: the reference's, or none.
xl::nn::Memory initial_memory(const xl::io::SafeTensors& data) {
  xl::nn::Memory memory;
  while (data.contains(fmt::format("mem_init_{}", memory.size()))) {
    memory.push_back(data.at(fmt::format("mem_init_{}", memory.size())));
  }
  return memory;
}

// Eval mode, segments with memory: per-token log-probs and memories.
std::vector<Difference> check_forward(
    xl::models::LanguageModelImpl& model,
    const xl::io::SafeTensors& data,
    int64_t segments,
    int64_t tgt_len,
    double tol) {
  model.eval();
  torch::NoGradGuard no_grad;
  xl::models::ForwardArgs args;
  args.log_probs = true;
  std::vector<Difference> out;
  std::vector<Difference> mems;
  xl::nn::Memory memory = initial_memory(data);
  for (int64_t s = 0; s < segments; ++s) {
    const auto result = model.forward(segment(data, s, tgt_len), memory, args);
    out.push_back(compare(
        fmt::format("log-probs, segment {}", s),
        result.log_probs,
        data.at(fmt::format("logp_{}", s)),
        tol));
    // What each side carries: HF keeps memories of length 0 where xl keeps none (mem_len 0),
    // which both mean that nothing is carried.
    const std::string first_layer = fmt::format("mem_{}_0", s);
    const bool reference_mems = data.contains(first_layer) && data.at(first_layer).size(0) > 0;
    const bool xl_mems = !result.mems.empty() && result.mems[0].size(0) > 0;
    if (reference_mems != xl_mems) {
      mems.push_back(
          {fmt::format("segment {}: memory kept", s),
           1.0,
           false,
           reference_mems ? "by HF only" : "by xl only"});
    }
    for (size_t l = 0; l < result.mems.size() && reference_mems && xl_mems; ++l) {
      mems.push_back(compare(
          fmt::format("segment {} layer {}", s, l),
          result.mems[l],
          data.at(fmt::format("mem_{}_{}", s, l)),
          tol));
    }
    memory = result.mems;
  }
  out.push_back(worst("memories", mems));
  return out;
}

// Training mode: the mean NLL of segments 0 and 1 (the second attending to the first's memory),
// every gradient, and every weight after one optimizer step.
std::vector<Difference> check_training(
    xl::models::LanguageModelImpl& model,
    const xl::config::TrainConfig& train,
    const xl::io::SafeTensors& data,
    int64_t tgt_len,
    double tol,
    std::vector<Difference>& gradients) {
  model.train();
  const auto first = model.forward(segment(data, 0, tgt_len), initial_memory(data), {});
  const auto second = model.forward(segment(data, 1, tgt_len), first.mems, {});
  const auto loss = (first.terms[0].sum + second.terms[0].sum) /
      static_cast<double>(first.terms[0].count + second.terms[0].count);
  loss.backward();
  std::vector<Difference> out{
      compare("loss (2 segments, training mode)", loss, data.at("loss"), tol)};
  std::vector<Difference> weights;
  const auto tensors = xl::models::hf_tensors(model);
  for (const HFTensor& t : tensors) {
    if (!t.tied) {
      // A parameter the loss did not reach has no gradient: zero, as the reference writes it.
      const auto grad = t.parameter.grad().defined() ? t.grad() : torch::zeros_like(t.value());
      gradients.push_back(compare(t.name, grad, data.at("grad/" + t.name), tol));
    }
  }
  out.push_back(worst(fmt::format("gradients ({} tensors)", gradients.size()), gradients));
  auto optimizer = xl::train::make_optimizer(train, model.parameters());
  if (train.clip > 0) {
    torch::nn::utils::clip_grad_norm_(model.parameters(), train.clip);
  }
  optimizer->step();
  for (const HFTensor& t : tensors) {
    if (!t.tied) {
      weights.push_back(compare(t.name, t.value(), data.at("after/" + t.name), tol));
    }
  }
  out.push_back(worst(
      fmt::format("weights after one {} step", xl::config::choice_name(train.optim)), weights));
  return out;
}

// The reference's meta.json: n_token, segments and tgt_len at least; what is not such a folder
// is named in one line.
nlohmann::json read_meta(const std::string& ref) {
  const auto file = std::filesystem::path(ref) / "meta.json";
  std::error_code ec;
  if (!std::filesystem::is_directory(ref, ec) || !std::filesystem::is_regular_file(file, ec)) {
    throw xl::UserError(fmt::format(
        "--ref {}: {}; name the folder scripts/parity/transfo_xl.py or xlnet.py wrote "
        "(scripts/parity/check.sh runs both)",
        ref,
        std::filesystem::is_directory(ref, ec) ? "it holds no meta.json" : "no such folder"));
  }
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(xl::read_file(file, "meta.json"));
  } catch (const nlohmann::json::exception&) {
    throw xl::UserError(fmt::format("{}: not JSON; write the reference again", file.string()));
  }
  for (const char* key : {"n_token", "segments", "tgt_len"}) {
    if (!meta.is_object() || !meta.contains(key) || !meta[key].is_number_integer()) {
      throw xl::UserError(fmt::format(
          "{}: no whole number \"{}\": not a reference of scripts/parity; write it again",
          file.string(),
          key));
    }
  }
  return meta;
}

int run(
    const std::string& config_path,
    const std::vector<std::string>& overrides,
    const std::string& ref,
    double tol,
    bool bf16) {
  // The reference runs without dropout; so does xl.
  auto all = overrides;
  all.emplace_back("model.dropout=0.0");
  all.emplace_back("model.dropatt=0.0");
  const auto config = xl::config::load(config_path, all);
  const auto meta = read_meta(ref);
  const int64_t n_token = meta["n_token"];
  const int64_t segments = meta["segments"];
  const int64_t tgt_len = meta["tgt_len"];
  const auto weights = xl::io::SafeTensors::load(ref + "/weights.safetensors");
  const auto data = xl::io::SafeTensors::load(ref + "/data.safetensors");

  if (meta.value("bf16", false) != bf16) {
    throw xl::UserError(fmt::format(
        "{}: the reference was written {} --bf16: run both sides alike",
        ref,
        bf16 ? "without" : "with"));
  }
  auto model = imported_model(config, n_token, weights);
  std::vector<Difference> rows;
  {
    // CPU autocast, as the reference ran Hugging Face's forward.
    xl::runtime::AutocastGuard autocast(torch::kCPU, bf16);
    rows = check_forward(*model, data, segments, tgt_len, tol);
  }
  const auto* txl = dynamic_cast<TransformerXLImpl*>(model.get());
  if (txl != nullptr && txl->crit->cluster_weight.defined()) {
    // Weights in kimiyoung's cluster order come in reversed.
    const auto reversed = imported_model(config, n_token, weights, true);
    rows.push_back(compare(
        "clusters imported in kimiyoung's order",
        dynamic_cast<TransformerXLImpl&>(*reversed).crit->cluster_weight.flip(0),
        txl->crit->cluster_weight,
        0.0));
  }
  std::vector<Difference> gradients;
  if (!bf16) { // the bf16 reference compares forwards only
    auto trained = imported_model(config, n_token, weights);
    for (auto& row : check_training(*trained, config.train, data, tgt_len, tol, gradients)) {
      rows.push_back(std::move(row));
    }
  }

  bool ok = true;
  fmt::print(
      "parity with Hugging Face {}{}: {} (batch {}, {} segments of {}), tolerance {:g}\n",
      txl != nullptr ? "TransfoXL" : "XLNet",
      bf16 ? " under CPU bf16 autocast" : "",
      config_path,
      meta["batch"].get<int64_t>(),
      segments,
      tgt_len,
      tol);
  for (const auto& row : rows) {
    ok = ok && row.ok;
    fmt::print(
        "  {:<42} max |diff| {:9.2e}  {}{}\n",
        row.what,
        row.max_abs,
        row.ok ? "ok" : "DIFFERS",
        row.where.empty() ? "" : "  (" + row.where + ")");
  }
  std::sort(gradients.begin(), gradients.end(), [](const auto& a, const auto& b) {
    return a.max_abs > b.max_abs;
  });
  if (!gradients.empty()) {
    fmt::print("  largest gradient differences:\n");
  }
  for (size_t i = 0; i < std::min<size_t>(5, gradients.size()); ++i) {
    fmt::print("    {:9.2e}  {}\n", gradients[i].max_abs, gradients[i].what);
  }
  fmt::print("{}\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-parity-check: compare xl with Hugging Face reference numbers"};
    std::string config;
    std::string ref;
    std::vector<std::string> overrides;
    double tol = 1e-5;
    bool bf16 = false;
    xl::app::add_common_flags(app);
    app.add_option("-c,--config", config, "xl config")->required();
    app.add_option("--ref", ref, "folder written by scripts/parity/transfo_xl.py")->required();
    app.add_option("--set", overrides, "config override (repeatable)");
    app.add_option("--tolerance", tol, "absolute and relative tolerance (float32: 1e-5)")
        ->check(xl::number_between(1e-12, 1.0));
    app.add_flag(
        "--bf16",
        bf16,
        "the forward under CPU bf16 autocast, against a reference written with --bf16");
    if (const int status = xl::app::parse_command_line(app, argc, argv); status >= 0) {
      return status;
    }
    return run(config, overrides, ref, tol, bf16);
  });
}
