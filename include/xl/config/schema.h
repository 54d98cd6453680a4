// The configuration schema: one struct per section. Each struct lists its
// fields exactly once in `fields()`, which the loader, the validator, the
// dumper and `--print-schema` all walk. Defaults follow
// kimiyoung/transformer-xl's train.py unless noted. Modules never see these
// structs; src/models maps them onto module Options.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/field.h"
#include "xl/config/tree.h"

namespace xl::config {

struct ModelConfig {
  std::string type = "transformer_xl";
  int64_t n_layer = 12;
  int64_t n_head = 10;
  int64_t d_model = 500;
  int64_t d_head = 50;
  int64_t d_inner = 1000;
  std::optional<int64_t> d_embed; // null: d_model
  double dropout = 0.0;
  double dropatt = 0.0;
  std::string attn_type = "relative";
  bool pre_lnorm = false;
  bool untie_r = false;
  int64_t mem_len = 0;
  int64_t ext_len = 0;
  bool same_length = false;
  int64_t clamp_len = -1;
  std::vector<int64_t> cutoffs;
  int64_t div_val = 1;
  bool tie_weight = true;
  std::vector<bool>
      tie_projs; // empty: [false, true, true, ...] (kimiyoung's wt103 setting)
  std::string init = "normal";
  double init_range = 0.1;
  double init_std = 0.02;
  double proj_init_std = 0.01;
  double layer_norm_eps = 1e-5;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("type", s.type, "model family", one_of({"transformer_xl"}));
    v("n_layer", s.n_layer, "number of layers", at_least(1));
    v("n_head", s.n_head, "attention heads", at_least(1));
    v("d_model", s.d_model, "hidden size", at_least(1));
    v("d_head", s.d_head, "size of each attention head", at_least(1));
    v("d_inner",
      s.d_inner,
      "inner size of the position-wise feed-forward",
      at_least(1));
    v("d_embed",
      s.d_embed,
      "embedding size before projection (null: d_model)",
      at_least(1));
    v("dropout",
      s.dropout,
      "dropout on embeddings, positions, attention output, FF",
      fraction());
    v("dropatt", s.dropatt, "dropout on attention probabilities", fraction());
    v("attn_type",
      s.attn_type,
      "relative (Transformer-XL) or absolute (vanilla sinusoid)",
      one_of({"relative", "absolute"}));
    v("pre_lnorm",
      s.pre_lnorm,
      "LayerNorm before each sub-layer instead of after",
      none());
    v("untie_r",
      s.untie_r,
      "per-layer u/v attention biases instead of shared ones",
      none());
    v("mem_len",
      s.mem_len,
      "cached hidden states per layer (segment recurrence)",
      at_least(0));
    v("ext_len",
      s.ext_len,
      "extended context without gradient or memory",
      at_least(0));
    v("same_length",
      s.same_length,
      "every query attends to the same number of keys",
      none());
    v("clamp_len",
      s.clamp_len,
      "clamp relative distances above this (-1: no clamping)",
      at_least(-1));
    v("cutoffs",
      s.cutoffs,
      "adaptive softmax/input cluster boundaries (empty: full softmax)",
      at_least(1));
    v("div_val",
      s.div_val,
      "embedding size divisor per adaptive cluster",
      at_least(1));
    v("tie_weight",
      s.tie_weight,
      "tie adaptive input and softmax weights",
      none());
    v("tie_projs",
      s.tie_projs,
      "tie each cluster's projection (empty: all but the first)",
      none());
    v("init", s.init, "weight initialisation", one_of({"normal", "uniform"}));
    v("init_range", s.init_range, "uniform init range", greater_than(0));
    v("init_std", s.init_std, "normal init std", greater_than(0));
    v("proj_init_std",
      s.proj_init_std,
      "init std of adaptive projections",
      greater_than(0));
    v("layer_norm_eps", s.layer_norm_eps, "LayerNorm epsilon", greater_than(0));
  }
};

struct DataConfig {
  std::string dir; // required: a folder written by xl-prep
  std::string train = "train.bin";
  std::string valid = "valid.bin";
  std::string test = "test.bin";
  std::string vocab = "vocab.txt";

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("dir", s.dir, "prepared data folder (written by xl-prep)", none());
    v("train", s.train, "training token file, relative to data.dir", none());
    v("valid", s.valid, "validation token file, relative to data.dir", none());
    v("test", s.test, "test token file, relative to data.dir", none());
    v("vocab", s.vocab, "vocabulary file, relative to data.dir", none());
  }
};

struct TrainConfig {
  int64_t seed = 1111;
  std::string device = "auto";
  int64_t threads = 0;
  int64_t batch_size = 60;
  int64_t batch_chunk = 1;
  int64_t tgt_len = 70;
  int64_t max_step = 100000;
  std::string optim = "adam";
  double lr = 2.5e-4;
  double mom = 0.0;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  std::string scheduler = "cosine";
  int64_t warmup_step = 0;
  double eta_min = 0.0;
  double decay_rate = 0.5;
  int64_t patience = 0;
  double lr_min = 0.0;
  double clip = 0.25;
  bool bf16 = false;
  int64_t log_interval = 200;
  int64_t eval_interval = 4000;
  std::optional<int64_t> max_eval_steps; // null: the whole validation split
  int64_t max_bad_steps = 5;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("seed", s.seed, "random seed", none());
    v("device", s.device, "where to train", one_of({"auto", "cpu", "cuda"}));
    v("threads",
      s.threads,
      "CPU threads for intra-op parallelism (0: LibTorch default)",
      at_least(0));
    v("batch_size", s.batch_size, "streams per batch", at_least(1));
    v("batch_chunk",
      s.batch_chunk,
      "split each batch into this many accumulation chunks",
      at_least(1));
    v("tgt_len", s.tgt_len, "tokens per training segment", at_least(1));
    v("max_step", s.max_step, "optimizer steps to train", at_least(1));
    v("optim", s.optim, "optimizer", one_of({"adam", "adamw", "sgd", "lamb"}));
    v("lr", s.lr, "peak learning rate", greater_than(0));
    v("mom", s.mom, "SGD momentum", fraction());
    v("weight_decay", s.weight_decay, "weight decay", at_least(0));
    v("beta1", s.beta1, "Adam/LAMB beta1", fraction());
    v("beta2", s.beta2, "Adam/LAMB beta2", fraction());
    v("eps", s.eps, "Adam/LAMB epsilon", greater_than(0));
    v("scheduler",
      s.scheduler,
      "learning-rate schedule after warmup",
      one_of({"cosine", "inv_sqrt", "constant", "plateau"}));
    v("warmup_step", s.warmup_step, "linear warmup steps", at_least(0));
    v("eta_min",
      s.eta_min,
      "final learning rate of the cosine schedule",
      at_least(0));
    v("decay_rate",
      s.decay_rate,
      "plateau: factor applied to the learning rate",
      Limits{0.0, 1.0, true, true, {}});
    v("patience",
      s.patience,
      "plateau: evaluations without improvement before decaying",
      at_least(0));
    v("lr_min",
      s.lr_min,
      "plateau: lower bound of the learning rate",
      at_least(0));
    v("clip", s.clip, "global gradient-norm clipping (0: off)", at_least(0));
    v("bf16", s.bf16, "bfloat16 autocast (CUDA only)", none());
    v("log_interval",
      s.log_interval,
      "steps between progress lines",
      at_least(1));
    v("eval_interval",
      s.eval_interval,
      "steps between validations and checkpoints",
      at_least(1));
    v("max_eval_steps",
      s.max_eval_steps,
      "validation segments per evaluation (null: all)",
      at_least(1));
    v("max_bad_steps",
      s.max_bad_steps,
      "consecutive NaN/Inf losses after which training stops",
      at_least(1));
  }
};

struct EvalConfig {
  std::string split = "test";
  int64_t batch_size = 10;
  std::optional<int64_t> tgt_len; // null: train.tgt_len
  std::optional<int64_t>
      mem_len; // null: model.mem_len + train.tgt_len - eval.tgt_len
  std::optional<int64_t> clamp_len; // null: model.clamp_len
  std::optional<bool> same_length;  // null: model.same_length
  std::string mode = "memory";

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("split", s.split, "split to evaluate", one_of({"valid", "test"}));
    v("batch_size", s.batch_size, "streams per evaluation batch", at_least(1));
    v("tgt_len",
      s.tgt_len,
      "tokens scored per segment (null: train.tgt_len)",
      greater_than(0));
    v("mem_len",
      s.mem_len,
      "evaluation memory (null: keep the training attention span)",
      at_least(0));
    v("clamp_len",
      s.clamp_len,
      "relative-distance clamp (null: model.clamp_len)",
      at_least(-1));
    v("same_length",
      s.same_length,
      "same attention length for every query (null: model's)",
      none());
    v("mode",
      s.mode,
      "memory: segments with recurrence; vanilla: sliding window, score the last position",
      one_of({"memory", "vanilla"}));
  }
};

struct RunConfig {
  std::string name;               // default: the config file's stem
  std::optional<std::string> dir; // null: runs/<name>
  std::string log_level = "info";

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("name", s.name, "run name (default: the config file name)", none());
    v("dir", s.dir, "run directory (null: runs/<run.name>)", none());
    v("log_level",
      s.log_level,
      "console log level",
      one_of({"trace", "debug", "info", "warn", "error"}));
  }
};

/// The whole resolved configuration.
struct Config {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  EvalConfig eval;
  RunConfig run;
  /// Where each key path was set ("model.d_model" -> file:line); keys left at
  /// their default are absent.
  std::map<std::string, Source> sources;

  template <class Self, class V>
  static void sections(Self& s, V&& v) {
    v("model", s.model);
    v("data", s.data);
    v("train", s.train);
    v("eval", s.eval);
    v("run", s.run);
  }

  /// Where `key` was set, for messages: "file:line", or "default" when it was
  /// not set.
  std::string where(const std::string& key) const;
};

} // namespace xl::config
