#include "xl/models/transformer_xl/model.h"

#include "xl/models/kit.h"
#include "xl/nn/masks.h"
#include "xl/nn/rel_decoder_layer.h"
#include "xl/nn/vanilla_decoder_layer.h"

namespace xl::models {

TransformerXLLengths TransformerXLLengths::with(const Span& span) const {
  TransformerXLLengths out = *this;
  out.mem_len = span.mem_len.value_or(mem_len);
  out.ext_len = span.ext_len.value_or(ext_len);
  out.clamp_len = span.clamp_len.value_or(clamp_len);
  out.same_length = span.same_length.value_or(same_length);
  return out;
}

TransformerXLImpl::TransformerXLImpl(const TransformerXLOptions& options_) : options(options_) {
  reset();
}

void TransformerXLImpl::reset() {
  const auto& o = options;
  const int64_t n_layer = o.stack().n_layer();
  const auto& attention = o.stack().layer().attention();
  const auto& adaptive = o.output().adaptive();
  TORCH_CHECK(
      adaptive.d_proj() == attention.d_model(),
      "the adaptive input and softmax must project to d_model ",
      attention.d_model(),
      ", got ",
      adaptive.d_proj());
  // One shared table always gets the softmax's dense gradient (its head reads it), so the
  // lookup's rows can be added into that.
  word_emb = register_module(
      "word_emb",
      nn::AdaptiveEmbedding(nn::AdaptiveOptions(adaptive).sparse_grad(
          o.output().tie_weight() && adaptive.div_val() == 1)));
  pos_emb = register_module(
      "pos_emb", nn::SinusoidEmbedding(nn::SinusoidEmbeddingOptions(attention.d_model())));
  TORCH_CHECK(
      !o.learned_positions() || (!o.relative() && o.n_ctx() >= 1),
      "learned positions need vanilla attention and n_ctx >= 1, got relative ",
      o.relative(),
      ", n_ctx ",
      o.n_ctx());
  if (o.learned_positions()) {
    positions = register_module(
        "positions",
        nn::LearnedPositions(nn::LearnedPositionsOptions(n_layer, o.n_ctx(), attention.d_model())));
  }
  drop = register_module("drop", nn::Dropout(attention.dropout()));
  if (o.relative()) {
    r_w_bias = register_parameter("r_w_bias", nn::global_bias(attention, n_layer, o.untie_r()));
    r_r_bias = register_parameter("r_r_bias", nn::global_bias(attention, n_layer, o.untie_r()));
  }
  layers = register_layer_stack(
      *this,
      LayerStackOptions(o.stack(), [layer = o.stack().layer(), relative = o.relative()](int64_t) {
        return relative ? nn::RelDecoderLayer(layer).ptr()
                        : std::shared_ptr<torch::nn::Module>(nn::VanillaDecoderLayer(layer).ptr());
      }));
  crit = register_module("crit", nn::AdaptiveLogSoftmax(o.output()));
  crit->tie_to(*word_emb);
  reset_parameters();
}

void TransformerXLImpl::reset_parameters() {
  // Module by module in registration order, parameters first (as named_parameters() lists them),
  // so that a seed gives the weights kimiyoung's name-based rules give.
  const nn::InitOptions& init = options.stack().init();
  if (r_w_bias.defined()) {
    init.weight(r_w_bias);
    init.weight(r_r_bias);
  }
  if (positions) {
    positions->reset_parameters(init);
  }
  word_emb->reset_parameters(init);
  layers->reset_parameters<nn::RelDecoderLayerImpl, nn::VanillaDecoderLayerImpl>(init);
  crit->reset_parameters(init);
}

std::pair<torch::Tensor, torch::Tensor> TransformerXLImpl::embed(
    const sources::Batch& batch,
    int64_t mlen,
    const TransformerXLLengths& lengths) {
  const auto& tokens = batch.tokens;
  const int64_t qlen = tokens.size(0);
  const auto embedded = word_emb(tokens, batch.on_host().tokens); // [L, B, D]
  const auto float_options = torch::dtype(torch::kFloat).device(tokens.device());
  if (options.relative()) {
    const auto distances = nn::relative_positions(mlen + qlen, lengths.clamp_len, float_options);
    // Positions first: the reference draws their dropout mask before the words'.
    auto r = drop(pos_emb(distances));
    return {drop(embedded), std::move(r)};
  }
  if (options.learned_positions()) { // added at every layer
    return {drop(embedded), torch::Tensor()};
  }
  const auto steps = torch::arange(qlen, float_options);
  return {drop(embedded + pos_emb(steps).unsqueeze(1)), torch::Tensor()};
}

torch::Tensor TransformerXLImpl::layer_forward(const torch::Tensor& h, const LayerArgs& args) {
  const int64_t i = args.index;
  const auto index = static_cast<size_t>(i);
  const auto& mask = args.tensors["mask"];
  const auto& mem = args.mem;
  if (options.relative()) {
    return layers->ptr<nn::RelDecoderLayerImpl>(index)->forward(
        h,
        {args.tensors["r"], nn::layer_bias(r_w_bias, i), nn::layer_bias(r_r_bias, i)},
        mask,
        mem,
        args.cache);
  }
  if (!options.learned_positions()) {
    return layers->ptr<nn::VanillaDecoderLayerImpl>(index)->forward(h, mask, mem, args.cache);
  }
  // The last rows of the table for [memory | segment]: the segment always reads the same rows.
  // The memory keeps no positions; they are added where it is read.
  const int64_t mlen = mem.defined() ? mem.size(0) : 0;
  const int64_t qlen = h.size(0);
  const int64_t first = options.n_ctx() - mlen - qlen;
  return layers->ptr<nn::VanillaDecoderLayerImpl>(index)->forward(
      h + positions(i, first + mlen, qlen), mask, mlen > 0 ? mem + positions(i, first, mlen) : mem);
}

torch::Tensor TransformerXLImpl::score(const torch::Tensor& core, const sources::Batch& batch) {
  const auto& targets = batch.targets;
  const int64_t tgt_len = targets.size(0);
  const auto pred = core.narrow(0, core.size(0) - tgt_len, tgt_len).reshape({-1, core.size(2)});
  return crit(pred, targets.reshape({-1}), batch.on_host().targets.reshape({-1}))
      .view({tgt_len, targets.size(1)});
}

ModelOutput TransformerXLImpl::forward(
    const sources::Batch& batch,
    const nn::Memory& mems,
    const ForwardArgs& args) {
  const auto& tokens = batch.tokens;
  const auto& targets = batch.targets;
  check_lm_batch(batch, args, "Transformer-XL");
  const auto lengths = options.lengths().with(args.span);
  const int64_t qlen = tokens.size(0);
  const int64_t mlen = mems.empty() ? 0 : mems[0].size(0);
  const auto mask =
      nn::causal_mask(qlen, mlen, lengths.same_length, lengths.mem_len, tokens.device());
  auto [core, r] = embed(batch, mlen, lengths);
  // The memory is detached and r a sinusoid: only core carries gradient into a layer. A full
  // memory (or none kept): the calls to come have these shapes.
  const auto stack = layers->forward(
      [this](const std::vector<torch::Tensor>& h, const LayerArgs& a) {
        return std::vector<torch::Tensor>{layer_forward(h[0], a)};
      },
      StackInput{
          {core},
          {{"mask", mask}, {"r", r}},
          mems,
          args.cache,
          full_memory(mems, lengths.mem_len)});
  core = drop(stack.streams[0]);

  ModelOutput out;
  out.mems = stack.next_memory(mems, lengths.mem_len, lengths.ext_len);
  if (targets.defined()) {
    add_lm_term(out, batch, score(core, batch), args); // log p [T, B]
  }
  if (args.next_token) {
    out.next_log_probs = crit->log_probs(core[qlen - 1]); // [B, V]
  }
  return out;
}

} // namespace xl::models
