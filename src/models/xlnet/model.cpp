#include "xl/models/xlnet/model.h"

#include "xl/models/kit.h"
#include "xl/nn/memory.h"
#include "xl/nn/two_stream_layer.h"
#include "xl/runtime/autocast.h"

namespace xl::models {

XLNetLengths XLNetLengths::with(const Span& span) const {
  XLNetLengths out = *this;
  out.mem_len = span.mem_len.value_or(mem_len);
  out.clamp_len = span.clamp_len.value_or(clamp_len);
  return out;
}

XLNetImpl::XLNetImpl(const XLNetOptions& options_) : options(options_) {
  reset();
}

void XLNetImpl::reset() {
  const auto& o = options;
  const auto& attention = o.layer().attention();
  TORCH_CHECK(
      o.n_token() >= 1 && o.n_layer() >= 1 && attention.n_head() >= 1 && attention.d_head() >= 1 &&
          o.n_class() >= 0,
      "XLNet needs a vocabulary, at least one layer and head, got ",
      o.n_token(),
      " tokens, ",
      o.n_layer(),
      " layers of ",
      attention.n_head(),
      " heads of ",
      attention.d_head(),
      ", ",
      o.n_class(),
      " classes");
  const int64_t d_model = attention.d_model();
  word_embedding = register_module("word_embedding", torch::nn::Embedding(o.n_token(), d_model));
  mask_emb = register_parameter("mask_emb", torch::empty({1, 1, d_model}));
  const auto bias = [&] { return nn::global_bias(attention, o.n_layer(), o.untie_r()); };
  r_w_bias = register_parameter("r_w_bias", bias());
  r_r_bias = register_parameter("r_r_bias", bias());
  r_s_bias = register_parameter("r_s_bias", bias());
  pos_emb =
      register_module("pos_emb", nn::SinusoidEmbedding(nn::SinusoidEmbeddingOptions(d_model)));
  drop = register_module("drop", nn::Dropout(attention.dropout()));
  layers = register_layer_stack(
      *this, o.n_layer(), [&](int64_t) { return nn::TwoStreamLayer(o.layer()); });
  lm_bias = register_parameter("lm_bias", torch::empty({o.n_token()}));
  if (o.n_class() > 0) {
    summary = register_module("summary", torch::nn::Linear(d_model, d_model));
    logits_proj = register_module("logits_proj", torch::nn::Linear(d_model, o.n_class()));
  }
  reset_parameters();
}

void XLNetImpl::reset_parameters() {
  const nn::InitOptions& init = options.init();
  torch::NoGradGuard no_grad;
  init.weight(word_embedding->weight);
  init.weight(mask_emb);
  init.weight(r_w_bias);
  init.weight(r_r_bias);
  init.weight(r_s_bias);
  for (const auto& layer : *layers) {
    layer->as<nn::TwoStreamLayerImpl>()->reset_parameters(init);
  }
  lm_bias.zero_();
  if (summary) {
    init.linear(summary);
    init.linear(logits_proj);
  }
}

std::pair<torch::Tensor, torch::Tensor> XLNetImpl::positions(
    const sources::Batch& batch,
    int64_t klen,
    const XLNetLengths& lengths) {
  const int64_t qlen = batch.tokens.size(0);
  // Signed distances of a query at the segment's end ... start: klen, ..., -qlen + 1.
  auto forward =
      torch::arange(klen, -qlen, -1, torch::dtype(torch::kFloat).device(batch.tokens.device()));
  if (lengths.clamp_len > 0) {
    const auto c = static_cast<double>(lengths.clamp_len);
    forward = forward.clamp(-c, c);
  }
  if (!batch.reversed.defined()) {
    return {drop(pos_emb(forward).unsqueeze(0)), torch::Tensor()};
  }
  TORCH_CHECK(
      batch.reversed.dim() == 1 && batch.reversed.size(0) == batch.tokens.size(1),
      "reversed must be [",
      batch.tokens.size(1),
      "], got ",
      batch.reversed.sizes());
  auto r = torch::stack({pos_emb(forward), pos_emb(-forward)});
  return {drop(r), batch.reversed.to(torch::kLong)};
}

namespace {

// Keys the query stream may not see, [B, 1, L, K] (undefined: all visible): padding and the
// permutation's future; the memory is always visible.
torch::Tensor hidden_keys(const sources::Batch& batch, int64_t mlen) {
  const auto& tokens = batch.tokens;
  const int64_t qlen = tokens.size(0);
  const int64_t bsz = tokens.size(1);
  const int64_t klen = mlen + qlen;
  const auto bool_options = torch::dtype(torch::kBool).device(tokens.device());
  torch::Tensor hidden;
  if (batch.padding.defined()) {
    TORCH_CHECK(
        batch.padding.sizes() == tokens.sizes(),
        "padding must be [L, B] like tokens ",
        tokens.sizes(),
        ", got ",
        batch.padding.sizes());
    hidden =
        torch::cat({torch::zeros({bsz, mlen}, bool_options), batch.padding.t().to(torch::kBool)}, 1)
            .view({bsz, 1, 1, klen})
            .expand({bsz, 1, qlen, klen});
  }
  if (batch.perm_mask.defined()) {
    const auto& perm = batch.perm_mask;
    TORCH_CHECK(
        perm.dim() == 3 && perm.size(0) == qlen && perm.size(1) == qlen && perm.size(2) == bsz,
        "perm_mask must be [",
        qlen,
        ", ",
        qlen,
        ", ",
        bsz,
        "], got ",
        perm.sizes());
    const auto future = torch::cat(
                            {torch::zeros({bsz, qlen, mlen}, bool_options),
                             perm.permute({2, 0, 1}).to(torch::kBool)},
                            2)
                            .unsqueeze(1);
    hidden = hidden.defined() ? hidden.logical_or(future) : future;
  }
  return hidden;
}

// Whether query i and key j are in different segments, [B, 1, L, K] (undefined without
// segment ids). The memory counts as segment 0; only equality matters.
torch::Tensor other_segment(const sources::Batch& batch, int64_t mlen) {
  const auto& seg = batch.segment_ids;
  if (!seg.defined()) {
    return {};
  }
  TORCH_CHECK(
      seg.sizes() == batch.tokens.sizes(),
      "segment_ids must be [L, B] like tokens ",
      batch.tokens.sizes(),
      ", got ",
      seg.sizes());
  const auto keys = torch::cat({torch::zeros({mlen, seg.size(1)}, seg.options()), seg});
  return (seg.t().unsqueeze(2) != keys.t().unsqueeze(1)).unsqueeze(1);
}

// The query stream's positions, validity and masks: the rows of the content stream's that
// target_mapping selects. One-hot rows give the prediction's input position; all-zero rows are
// padding, which read position 0 and are zeroed by query_valid.
void add_query_terms(
    const sources::Batch& batch,
    int64_t klen,
    const torch::Tensor& hidden,
    nn::TwoStreamTerms& terms) {
  const auto& mapping = batch.target_mapping;
  const int64_t qlen = batch.tokens.size(0);
  const int64_t bsz = batch.tokens.size(1);
  TORCH_CHECK(
      mapping.dim() == 3 && mapping.size(1) == qlen && mapping.size(2) == bsz,
      "target_mapping must be [P, ",
      qlen,
      ", ",
      bsz,
      "], got ",
      mapping.sizes());
  const int64_t n_predict = mapping.size(0);
  terms.query.positions = mapping.argmax(1).t().contiguous(); // [B, P]
  const auto valid = mapping.sum(1);                          // [P, B]
  terms.query_valid = valid.unsqueeze(2);
  const auto rows =
      terms.query.positions.view({bsz, 1, n_predict, 1}).expand({bsz, 1, n_predict, klen});
  if (hidden.defined()) {
    terms.query.mask = hidden.gather(2, rows);
  }
  if (terms.content.other_segment.defined()) {
    terms.query.other_segment = terms.content.other_segment.gather(2, rows);
  }
}

// Tokens [L, B], one memory per layer or none, and what to score: a permutation LM's
// target_mapping or a classifier's labels; XLNet does not generate.
void check_inputs(
    const sources::Batch& batch,
    const nn::Memory& mems,
    const ForwardArgs& args,
    int64_t n_layer) {
  const auto& tokens = batch.tokens;
  TORCH_CHECK(
      tokens.defined() && tokens.dim() == 2,
      "XLNet expects tokens [L, B], got ",
      tokens.defined() ? tokens.sizes() : torch::IntArrayRef{});
  TORCH_CHECK(
      !args.next_token,
      "XLNet is a permutation language model: it scores targets, it does not generate");
  TORCH_CHECK(
      mems.empty() || static_cast<int64_t>(mems.size()) == n_layer,
      "expected ",
      n_layer,
      " memory tensors, got ",
      mems.size());
  TORCH_CHECK(
      batch.target_mapping.defined() || batch.labels.defined(),
      "XLNet needs target_mapping (permutation LM) or labels (classification)");
}

} // namespace

void XLNetImpl::stream_queries(const sources::Batch& batch, int64_t mlen, nn::TwoStreamTerms& terms)
    const {
  const auto& tokens = batch.tokens;
  const int64_t qlen = tokens.size(0);
  const int64_t klen = mlen + qlen;
  const torch::Tensor hidden = hidden_keys(batch, mlen);
  terms.content.positions =
      torch::arange(qlen, torch::dtype(torch::kLong).device(tokens.device())).unsqueeze(0);
  if (hidden.defined()) {
    // The content stream sees its own position, whatever the permutation says.
    const auto self = torch::arange(klen, tokens.options()).unsqueeze(0) ==
        torch::arange(qlen, tokens.options()).unsqueeze(1) + mlen;
    terms.content.mask = hidden.logical_and(self.logical_not());
  }
  terms.content.other_segment = other_segment(batch, mlen);
  if (batch.target_mapping.defined()) {
    add_query_terms(batch, klen, hidden, terms);
  }
}

void XLNetImpl::lm_terms(
    const sources::Batch& batch,
    const torch::Tensor& g,
    const ForwardArgs& args,
    ModelOutput& out) {
  const auto& targets = batch.targets;
  TORCH_CHECK(
      targets.defined() && targets.dim() == 2 && targets.size(0) == g.size(0) &&
          targets.size(1) == g.size(1),
      "the permutation LM needs targets [",
      g.size(0),
      ", ",
      g.size(1),
      "] (one per prediction), got ",
      targets.defined() ? targets.sizes() : torch::IntArrayRef{});
  const auto logits = runtime::linear(g, word_embedding->weight, lm_bias); // [P, B, V]
  const auto log_probs = torch::log_softmax(logits.to(torch::kFloat), -1)
                             .gather(2, targets.unsqueeze(2))
                             .squeeze(2); // [P, B]
  add_lm_term(out, batch, log_probs, args);
}

void XLNetImpl::classification_terms(
    const sources::Batch& batch,
    const torch::Tensor& h,
    ModelOutput& out) {
  const auto& labels = batch.labels;
  TORCH_CHECK(summary, "labels given to an XLNet without a classification head (n_class 0)");
  TORCH_CHECK(
      labels.dim() == 1 && labels.size(0) == h.size(1),
      "labels must be [",
      h.size(1),
      "], got ",
      labels.sizes());
  // Inputs end in <cls> (left padding), so the last position summarises the sequence; or
  // the mean of the real positions.
  torch::Tensor summed; // [B, D]
  if (options.summary() == SequenceSummary::kMean) {
    auto real = torch::ones({h.size(0), h.size(1), 1}, h.options());
    if (batch.padding.defined()) {
      real = batch.padding.logical_not().unsqueeze(2).to(h.dtype());
    }
    summed = (h * real).sum(0) / real.sum(0).clamp_min(1.0);
  } else {
    summed = h[h.size(0) - 1];
  }
  const auto pooled = drop(torch::tanh(runtime::linear(*summary, summed)));
  out.logits = runtime::linear(*logits_proj, pooled).to(torch::kFloat); // [B, C]
  const int64_t rows = labels.size(0);
  out.terms.push_back(
      {"cls",
       torch::nn::functional::cross_entropy(
           out.logits,
           labels,
           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)),
       rows,
       1.0,
       TermKind::kNll});
  out.terms.push_back(
      {"cls",
       out.logits.argmax(1).eq(labels).sum().to(torch::kFloat),
       rows,
       0.0,
       TermKind::kAccuracy});
}

std::string XLNetImpl::use_graphs(std::optional<runtime::GraphReplay> replay) {
  if (replay && summary) {
    graphs_.reset();
    return "a classifier's batches are cut to their longest review, so their shapes change from "
           "batch to batch";
  }
  return graphs_for(replay, options.checkpoint_layers(), graphs_);
}

std::pair<torch::Tensor, torch::Tensor> XLNetImpl::run_layer(
    int64_t i,
    const torch::Tensor& h,
    const torch::Tensor& g,
    const nn::TwoStreamTerms& terms,
    const torch::Tensor& mem,
    nn::AttentionCache* cache) {
  const auto index = static_cast<size_t>(i);
  // in = {h} or {h, g}. The biases are sliced inside, so that a replay's backward reaches the
  // parameters; the memory is detached and r a sinusoid. Captures by value: a replay runs after
  // forward has returned.
  const auto layer = [this, i, index, terms, mem, cache](const std::vector<torch::Tensor>& in) {
    nn::TwoStreamTerms layer_terms = terms;
    layer_terms.r_w_bias = nn::layer_bias(r_w_bias, i);
    layer_terms.r_r_bias = nn::layer_bias(r_r_bias, i);
    layer_terms.r_s_bias = nn::layer_bias(r_s_bias, i);
    auto [h_out, g_out] = layers->ptr<nn::TwoStreamLayerImpl>(index)->forward(
        in[0], in.size() > 1 ? in[1] : torch::Tensor(), layer_terms, mem, cache);
    std::vector<torch::Tensor> out{std::move(h_out)};
    if (g_out.defined()) {
      out.push_back(std::move(g_out));
    }
    return out;
  };
  std::vector<torch::Tensor> in{h};
  if (g.defined()) {
    in.push_back(g);
  }
  const auto out = models::run_layer(options.checkpoint_layers(), layer, in);
  return {out[0], out.size() > 1 ? out[1] : torch::Tensor()};
}

namespace {

// The tensors of `terms` every layer reads, in a fixed order (undefined ones included).
std::vector<torch::Tensor*> term_slots(nn::TwoStreamTerms& t) {
  return {
      &t.r,
      &t.direction,
      &t.content.positions,
      &t.content.mask,
      &t.content.other_segment,
      &t.query.positions,
      &t.query.mask,
      &t.query.other_segment,
      &t.query_valid};
}

} // namespace

std::pair<torch::Tensor, torch::Tensor> XLNetImpl::run_layers(
    torch::Tensor h,
    torch::Tensor g,
    const nn::TwoStreamTerms& terms,
    const nn::Memory& mems,
    ProjectionCache* cache,
    std::vector<torch::Tensor>& hiddens) {
  if (cache != nullptr) {
    cache->layers.resize(static_cast<size_t>(options.n_layer()));
  }
  for (int64_t i = 0; i < options.n_layer(); ++i) {
    const auto index = static_cast<size_t>(i);
    hiddens.push_back(h);
    std::tie(h, g) = run_layer(
        i,
        h,
        g,
        terms,
        mems.empty() ? torch::Tensor() : mems[index],
        cache != nullptr ? &cache->layers[index] : nullptr);
  }
  return {h, g};
}

std::pair<torch::Tensor, torch::Tensor> XLNetImpl::graphed_layers(
    const torch::Tensor& h,
    const torch::Tensor& g,
    nn::TwoStreamTerms terms,
    const nn::Memory& mems,
    std::vector<torch::Tensor>& hiddens) {
  std::vector<torch::Tensor> in{h, g};
  std::vector<bool> present;
  std::string key = is_training() ? "train:" : "eval:";
  for (auto* slot : term_slots(terms)) {
    present.push_back(slot->defined());
    key += slot->defined() ? '1' : '0';
    if (slot->defined()) {
      in.push_back(*slot);
    }
  }
  const size_t first_mem = in.size();
  in.insert(in.end(), mems.begin(), mems.end());
  // Reads its inputs and the weights alone: a replay runs it on other values.
  const auto stack =
      [this, present, first_mem, has_mem = !mems.empty()](const std::vector<torch::Tensor>& x) {
        nn::TwoStreamTerms t;
        auto slots = term_slots(t);
        size_t k = 2;
        for (size_t s = 0; s < slots.size(); ++s) {
          if (present[s]) {
            *slots[s] = x[k++];
          }
        }
        std::vector<torch::Tensor> outs;
        auto hh = x[0];
        auto gg = x[1];
        for (int64_t i = 0; i < options.n_layer(); ++i) {
          const auto mem = has_mem ? x[first_mem + static_cast<size_t>(i)] : torch::Tensor();
          std::tie(hh, gg) = run_layer(i, hh, gg, t, mem, nullptr); // graphs: no recompute
          outs.push_back(hh);
        }
        outs.push_back(gg);
        return outs;
      };
  const auto params = [this] {
    auto p = layers->parameters();
    p.insert(p.end(), {r_w_bias, r_r_bias, r_s_bias});
    return p;
  };
  const auto outs = graphs_->run(key, stack, params, in);
  hiddens.push_back(h);
  hiddens.insert(hiddens.end(), outs.begin(), outs.end() - 2);
  return {outs[outs.size() - 2], outs.back()};
}

ModelOutput XLNetImpl::forward(
    const sources::Batch& batch,
    const nn::Memory& mems,
    const ForwardArgs& args) {
  check_inputs(batch, mems, args, options.n_layer());
  const auto& tokens = batch.tokens;
  const bool two_stream = batch.target_mapping.defined();
  const auto lengths = options.lengths().with(args.span);
  const int64_t qlen = tokens.size(0);
  const int64_t bsz = tokens.size(1);
  const int64_t mlen = mems.empty() ? 0 : mems[0].size(0);

  nn::TwoStreamTerms terms;
  std::tie(terms.r, terms.direction) = positions(batch, mlen + qlen, lengths);
  stream_queries(batch, mlen, terms);
  auto h = drop(word_embedding(tokens)); // [L, B, D]
  torch::Tensor g;
  if (two_stream) {
    g = drop(mask_emb.expand({batch.target_mapping.size(0), bsz, mask_emb.size(2)})); // [P, B, D]
  }
  std::vector<torch::Tensor> hiddens;
  // The permutation LM with a full memory (or none kept): the calls to come have these shapes.
  const bool graphed = graphs_ && two_stream && args.cache == nullptr &&
      (mems.empty() ? lengths.mem_len == 0 : mlen == lengths.mem_len);
  std::tie(h, g) = graphed ? graphed_layers(h, g, terms, mems, hiddens)
                           : run_layers(h, g, terms, mems, args.cache, hiddens);

  ModelOutput out;
  // reuse_len: only the first positions go into the memory; the rest are read again next time.
  const int64_t not_reused =
      lengths.reuse_len > 0 ? std::max<int64_t>(0, qlen - lengths.reuse_len) : 0;
  out.mems = nn::update_memory(mems, hiddens, lengths.mem_len, not_reused);
  if (graphed) { // the graph's next replay (another chunk's, first) overwrites its outputs
    for (auto& m : out.mems) {
      m = m.clone();
    }
  }
  if (args.cache != nullptr) { // the next memory ends where the reused rows do
    for (auto& layer : args.cache->layers) {
      layer.tail = not_reused;
    }
  }
  if (two_stream) {
    lm_terms(batch, drop(g), args, out);
  } else {
    classification_terms(batch, drop(h), out);
  }
  return out;
}

} // namespace xl::models
