#include "xl/models/xlnet/model.h"

#include "xl/models/kit.h"
#include "xl/models/xlnet/stream_terms.h"
#include "xl/nn/memory.h"
#include "xl/nn/two_stream_layer.h"
#include "xl/runtime/autocast.h"

namespace xl::models {

XLNetLengths XLNetLengths::with(const Span& span) const {
  XLNetLengths out = *this;
  out.mem_len = span.mem_len.value_or(mem_len);
  out.clamp_len = span.clamp_len.value_or(clamp_len);
  out.reuse_len = span.reuse_len.value_or(reuse_len);
  return out;
}

XLNetImpl::XLNetImpl(const XLNetOptions& options_) : options(options_) {
  reset();
}

void XLNetImpl::reset() {
  const auto& o = options;
  const auto& attention = o.stack().layer().attention();
  TORCH_CHECK(
      o.n_token() >= 1 && o.n_class() >= 0,
      "XLNet needs a vocabulary, got ",
      o.n_token(),
      " tokens and ",
      o.n_class(),
      " classes");
  const int64_t d_model = attention.d_model();
  word_embedding = register_module("word_embedding", torch::nn::Embedding(o.n_token(), d_model));
  mask_emb = register_parameter("mask_emb", torch::empty({1, 1, d_model}));
  const auto bias = [&] { return nn::global_bias(attention, o.stack().n_layer(), o.untie_r()); };
  r_w_bias = register_parameter("r_w_bias", bias());
  r_r_bias = register_parameter("r_r_bias", bias());
  r_s_bias = register_parameter("r_s_bias", bias());
  pos_emb =
      register_module("pos_emb", nn::SinusoidEmbedding(nn::SinusoidEmbeddingOptions(d_model)));
  drop = register_module("drop", nn::Dropout(attention.dropout()));
  layers = register_layer_stack(
      *this,
      layers_alike<nn::TwoStreamLayer>(o.stack()).no_graphs(
          o.n_class() > 0 ? "a classifier's batches are cut to their longest review, so their "
                            "shapes change from batch to batch"
                          : ""));
  lm_bias = register_parameter("lm_bias", torch::empty({o.n_token()}));
  if (o.n_class() > 0) {
    summary = register_module("summary", torch::nn::Linear(d_model, d_model));
    logits_proj = register_module("logits_proj", torch::nn::Linear(d_model, o.n_class()));
  }
  reset_parameters();
}

void XLNetImpl::reset_parameters() {
  const nn::InitOptions& init = options.stack().init();
  torch::NoGradGuard no_grad;
  init.weight(word_embedding->weight);
  init.weight(mask_emb);
  init.weight(r_w_bias);
  init.weight(r_r_bias);
  init.weight(r_s_bias);
  layers->reset_parameters<nn::TwoStreamLayerImpl>(init);
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

// Tokens [L, B] and what to score: a permutation LM's target_mapping or a classifier's labels;
// XLNet does not generate. (The stack checks the memory.)
void check_inputs(const sources::Batch& batch, const ForwardArgs& args) {
  const auto& tokens = batch.tokens;
  TORCH_CHECK(
      tokens.defined() && tokens.dim() == 2,
      "XLNet expects tokens [L, B], got ",
      tokens.defined() ? tokens.sizes() : torch::IntArrayRef{});
  TORCH_CHECK(
      !args.next_token,
      "XLNet is a permutation language model: it scores targets, it does not generate");
  TORCH_CHECK(
      batch.target_mapping.defined() || batch.labels.defined(),
      "XLNet needs target_mapping (permutation LM) or labels (classification)");
}

} // namespace

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

std::vector<torch::Tensor> XLNetImpl::layer_forward(
    const std::vector<torch::Tensor>& streams,
    const LayerArgs& args) {
  const int64_t i = args.index;
  // The biases are sliced here, inside the stack, so that a replay's backward reaches the
  // parameters; the memory is detached and r a sinusoid.
  nn::TwoStreamTerms terms = terms_of(args.tensors);
  terms.r_w_bias = nn::layer_bias(r_w_bias, i);
  terms.r_r_bias = nn::layer_bias(r_r_bias, i);
  terms.r_s_bias = nn::layer_bias(r_s_bias, i);
  auto [h, g] = layers->ptr<nn::TwoStreamLayerImpl>(static_cast<size_t>(i))
                    ->forward(
                        streams[0],
                        streams.size() > 1 ? streams[1] : torch::Tensor(),
                        terms,
                        args.mem,
                        args.cache);
  std::vector<torch::Tensor> out{std::move(h)};
  if (g.defined()) {
    out.push_back(std::move(g));
  }
  return out;
}

ModelOutput XLNetImpl::forward(
    const sources::Batch& batch,
    const nn::Memory& mems,
    const ForwardArgs& args) {
  check_inputs(batch, args);
  const auto& tokens = batch.tokens;
  const bool two_stream = batch.target_mapping.defined();
  const auto lengths = options.lengths().with(args.span);
  const int64_t qlen = tokens.size(0);
  const int64_t bsz = tokens.size(1);
  const int64_t mlen = mems.empty() ? 0 : mems[0].size(0);

  nn::TwoStreamTerms terms;
  std::tie(terms.r, terms.direction) = positions(batch, mlen + qlen, lengths);
  add_stream_queries(batch, mlen, terms);
  std::vector<torch::Tensor> streams{drop(word_embedding(tokens))}; // [L, B, D]
  if (two_stream) {                                                 // [P, B, D]
    streams.push_back(drop(mask_emb.expand({batch.target_mapping.size(0), bsz, mask_emb.size(2)})));
  }
  // The permutation LM with a full memory (or none kept): the calls to come have these shapes.
  const auto stack = layers->forward(
      [this](const std::vector<torch::Tensor>& in, const LayerArgs& a) {
        return layer_forward(in, a);
      },
      StackInput{
          streams,
          call_tensors(terms),
          mems,
          args.cache,
          two_stream && full_memory(mems, lengths.mem_len)});

  ModelOutput out;
  // reuse_len: only the first positions go into the memory; the rest are read again next time.
  const int64_t not_reused =
      lengths.reuse_len > 0 ? std::max<int64_t>(0, qlen - lengths.reuse_len) : 0;
  out.mems = stack.next_memory(mems, lengths.mem_len, not_reused);
  if (two_stream) {
    lm_terms(batch, drop(stack.streams[1]), args, out);
  } else {
    classification_terms(batch, drop(stack.streams[0]), out);
  }
  return out;
}

} // namespace xl::models
