// The configuration schema: one struct per section. Each struct lists its fields exactly once in
// `fields()`, which the loader, the validator, the dumper and `--print-schema` all walk; string
// choices are enums, parsed once. Keys every model family has live in `model`; a family's own keys
// live in its sub-section (`model.transformer_xl`), which only that `model.type` may set and which
// the family's folder defines (models/<family>/config.h, seen here through family_section.h).
// Defaults follow kimiyoung/transformer-xl's train.py unless noted. Modules never see these
// structs; src/models maps them onto module Options.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/family_section.h"
#include "xl/config/field.h"
#include "xl/config/source.h"

namespace xl::config {

enum class Activation { kRelu, kGelu, kGeluTanh };
enum class Init { kNormal, kUniform };
enum class Device { kAuto, kCpu, kCuda };
enum class Sampling { kOrdered, kRandomWindows };
enum class Optim { kAdam, kAdamW, kSgd, kLamb };
enum class Scheduler { kCosine, kPoly, kInvSqrt, kConstant, kPlateau };
enum class EvalMode { kMemory, kVanilla };

// clang-format off
template <> struct Choices<Activation> {
  static constexpr std::array<Choice<Activation>, 3> all{{{Activation::kRelu, "relu"}, {Activation::kGelu, "gelu"}, {Activation::kGeluTanh, "gelu_tanh"}}};
};
template <> struct Choices<Init> {
  static constexpr std::array<Choice<Init>, 2> all{{{Init::kNormal, "normal"}, {Init::kUniform, "uniform"}}};
};
template <> struct Choices<Device> {
  static constexpr std::array<Choice<Device>, 3> all{{{Device::kAuto, "auto"}, {Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}}};
};
template <> struct Choices<Sampling> {
  static constexpr std::array<Choice<Sampling>, 2> all{{{Sampling::kOrdered, "ordered"}, {Sampling::kRandomWindows, "random_windows"}}};
};
template <> struct Choices<Optim> {
  static constexpr std::array<Choice<Optim>, 4> all{{{Optim::kAdam, "adam"}, {Optim::kAdamW, "adamw"}, {Optim::kSgd, "sgd"}, {Optim::kLamb, "lamb"}}};
};
template <> struct Choices<Scheduler> {
  static constexpr std::array<Choice<Scheduler>, 5> all{{{Scheduler::kCosine, "cosine"}, {Scheduler::kPoly, "poly"}, {Scheduler::kInvSqrt, "inv_sqrt"}, {Scheduler::kConstant, "constant"}, {Scheduler::kPlateau, "plateau"}}};
};
template <> struct Choices<EvalMode> {
  static constexpr std::array<Choice<EvalMode>, 2> all{{{EvalMode::kMemory, "memory"}, {EvalMode::kVanilla, "vanilla"}}};
};
// clang-format on

/// model.type: a model family's name. Read and written as the enums' choices are (unquoted, one
/// of model_types()), but open: a program may accept more names (accept_model_type).
struct ModelType {
  ModelType() = default;
  // Implicit: a family's name reads as the type ("c.model.type = \"xlnet\"").
  ModelType(std::string name_) : name(std::move(name_)) {}
  ModelType(const char* name_) : name(name_) {}
  std::string name;
};
inline bool operator==(const ModelType& a, const std::string& b) {
  return a.name == b;
}
inline bool operator!=(const ModelType& a, const std::string& b) {
  return a.name != b;
}
template <>
struct TypeName<ModelType> {
  static std::string get() {
    return "string";
  }
};

struct ModelConfig {
  ModelType type = "transformer_xl";
  int64_t n_layer = 12;
  int64_t n_head = 10;
  int64_t d_model = 500;
  int64_t d_head = 50;
  int64_t d_inner = 1000;
  double dropout = 0.0;
  double dropatt = 0.0;
  bool pre_lnorm = false;
  Init init = Init::kNormal;
  double init_range = 0.1;
  double init_std = 0.02;
  double layer_norm_eps = 1e-5;
  /// model.<type>: read and written through section<S>()
  FamilySectionSlot family_section;

  /// The section of model.type's family, a struct S of models/<family>/config.h (its defaults
  /// where none was read or set); the mutable one first replaces a section of another family by
  /// S's defaults.
  template <class S>
  const S& section() const {
    return *static_cast<const S*>(family_section.find(typeid(S)));
  }
  template <class S>
  S& section() {
    return *static_cast<S*>(family_section.find(typeid(S)));
  }

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("type", s.type, "model family (its keys: model.<type>)", one_of(model_types()));
    v("n_layer", s.n_layer, "number of layers", at_least(1));
    v("n_head", s.n_head, "attention heads", at_least(1));
    v("d_model", s.d_model, "hidden size", at_least(1));
    v("d_head", s.d_head, "size of each attention head", at_least(1));
    v("d_inner", s.d_inner, "inner size of the position-wise feed-forward", at_least(1));
    v("dropout", s.dropout, "dropout on embeddings, positions, attention output, FF", fraction());
    v("dropatt", s.dropatt, "dropout on attention probabilities", fraction());
    v("pre_lnorm", s.pre_lnorm, "LayerNorm before each sub-layer instead of after");
    v("init", s.init, "weight initialisation");
    v("init_range", s.init_range, "uniform init range", greater_than(0));
    v("init_std", s.init_std, "normal init std (and of LayerNorm gains around 1)", greater_than(0));
    v("layer_norm_eps", s.layer_norm_eps, "LayerNorm epsilon", greater_than(0));
    v.family(s.family_section, s.type.name);
    // clang-format on
  }
};

struct DataConfig {
  std::string dir; // required: a folder written by xl-prep
  std::string train = "train.bin";
  std::string valid = "valid.bin";
  std::string test = "test.bin";
  std::string vocab = "vocab.txt";
  std::optional<int64_t> train_examples; // null: all

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("dir", s.dir, "prepared data folder (written by xl-prep)");
    v("train", s.train, "training token file, relative to data.dir");
    v("valid", s.valid, "validation token file, relative to data.dir");
    v("test", s.test, "test token file, relative to data.dir");
    v("vocab", s.vocab, "vocabulary file, relative to data.dir");
    v("train_examples", s.train_examples, "labelled data (XLNet classification): train on the first N examples of data.train, for runs with fewer labels (null: all)", at_least(1));
    // clang-format on
  }
};

struct TrainConfig {
  int64_t seed = 1111;
  Device device = Device::kAuto;
  int64_t threads = 0;
  double dist_start_timeout_s = 300.0;
  double dist_timeout_s = 1800.0;
  Sampling sampling = Sampling::kOrdered;
  int64_t batch_size = 60;
  int64_t batch_chunk = 1;
  int64_t tgt_len = 70;
  bool group_by_length = false;
  int64_t max_step = 100000;
  Optim optim = Optim::kAdam;
  double lr = 2.5e-4;
  double mom = 0.0;
  double weight_decay = 0.0;
  bool decay_vectors = true;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool fused_optim = true;
  Scheduler scheduler = Scheduler::kCosine;
  int64_t warmup_step = 0;
  double eta_min = 0.0;
  double decay_rate = 0.5;
  int64_t patience = 0;
  double lr_min = 0.0;
  double clip = 0.25;
  double lr_layer_decay = 1.0;
  std::vector<std::string> freeze;
  bool bf16 = false;
  bool tf32 = true;
  std::optional<bool> cuda_graphs; // null: on for CUDA
  bool activation_checkpointing = false;
  int64_t log_interval = 200;
  int64_t eval_interval = 4000;
  std::optional<int64_t> max_eval_steps; // null: the whole validation split
  int64_t max_bad_steps = 5;
  std::optional<int64_t> early_stop; // null: never
  int64_t keep_snapshots = 0;
  std::optional<std::string> init_from; // null: fresh weights
  std::vector<std::string> init_exclude;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("seed", s.seed, "random seed");
    v("device", s.device, "where to train");
    v("threads", s.threads, "CPU threads for intra-op parallelism (0: LibTorch default, one per core); runs sharing a machine do best with cores / runs each (docs/benchmarks.md, threads on shared cores)", between(0, std::numeric_limits<int>::max()));
    v("dist_start_timeout_s", s.dist_start_timeout_s, "data-parallel training (torchrun): seconds a process waits for the others to join at MASTER_ADDR:MASTER_PORT before it gives up", open_interval(0, 1e6));
    v("dist_timeout_s", s.dist_timeout_s, "data-parallel training (torchrun): seconds a process waits in an exchange (the gradients' sum) for the others before it ends with an error: a process that stopped or hung ends the run after this, resumable from its last checkpoint", open_interval(0, 1e6));
    v("sampling", s.sampling, "ordered: contiguous streams whose memory carries over; random_windows: windows at random offsets, nothing carried");
    v("batch_size", s.batch_size, "streams (or windows) per batch", at_least(1));
    v("batch_chunk", s.batch_chunk, "split each batch into this many accumulation chunks", at_least(1));
    v("tgt_len", s.tgt_len, "tokens per training segment (window)", at_least(1));
    v("group_by_length", s.group_by_length, "labelled data: training batches of reviews of similar lengths (windows of 50 batches of each pass's order sorted by length, the batches in random order), each cut to its longest review: on NSMC about a third of the positions to compute (evaluations always read labelled data by length, which changes no score)");
    v("max_step", s.max_step, "optimizer steps to train", at_least(1));
    v("optim", s.optim, "optimizer");
    v("lr", s.lr, "peak learning rate", greater_than(0));
    v("mom", s.mom, "SGD momentum", fraction());
    v("weight_decay", s.weight_decay, "weight decay (L2 for adam, sgd; decoupled for adamw, lamb)", at_least(0));
    v("decay_vectors", s.decay_vectors, "weight decay on 1-D parameters too (false: LayerNorm gains and biases and every bias vector are not decayed, as zihangdai/xlnet's AdamWeightDecay and Hugging Face's no_decay lists)");
    v("beta1", s.beta1, "Adam/LAMB beta1", fraction());
    v("beta2", s.beta2, "Adam/LAMB beta2", fraction());
    v("eps", s.eps, "Adam/LAMB epsilon", greater_than(0));
    v("fused_optim", s.fused_optim, "adam, adamw, sgd: update every parameter in one fused multi-tensor kernel, which skips a non-finite step on the device (false: LibTorch's per-tensor step, after reading the step's finiteness; same formula and state, the last float bits may differ)");
    v("scheduler", s.scheduler, "learning-rate schedule after warmup: cosine or poly (linear) decay to eta_min at max_step, inv_sqrt, constant, plateau");
    v("warmup_step", s.warmup_step, "linear warmup steps", at_least(0));
    v("eta_min", s.eta_min, "final learning rate of the cosine and poly schedules", at_least(0));
    v("decay_rate", s.decay_rate, "plateau: factor applied to the learning rate", open_interval(0, 1));
    v("patience", s.patience, "plateau: evaluations without improvement before decaying", at_least(0));
    v("lr_min", s.lr_min, "plateau: lower bound of the learning rate", at_least(0));
    v("clip", s.clip, "global gradient-norm clipping (0: off)", at_least(0));
    v("lr_layer_decay", s.lr_layer_decay, "layer-wise learning-rate decay: the parameters of layer i of n (layers.<i>.*) train at lr * lr_layer_decay^(n - 1 - i), the others at lr (zihangdai/xlnet's lr_layer_decay_rate, applied to the rate because Adam undoes a scaled gradient)", Limits{0.0, 1.0, true, false, {}});
    v("freeze", s.freeze, "parameters not to train, by name pattern (* any characters, ? one): a linear probe freezes everything but the classification head (configs/xlnet/ko_probe_cpu.yaml); the log lists what is frozen");
    v("bf16", s.bf16, "bfloat16 autocast (CUDA or the CPU)");
    v("tf32", s.tf32, "CUDA: float32 matrix products and convolutions on TF32 tensor cores (Ampere and newer; 10-bit mantissa products, float32 sums), as NVIDIA's Transformer-XL recipe runs; false: full float32. No effect on the CPU or under bf16's products");
    v("cuda_graphs", s.cuda_graphs, "CUDA: run the layer stack as a CUDA graph, captured once and replayed every step and evaluated segment whose shapes it has seen (a full memory, or none kept), one launch for thousands of kernels; the same numbers. null: on for CUDA. A model or setting that cannot (an XLNet classifier, activation checkpointing) runs eagerly and says why in one log line; no effect on the CPU");
    v("activation_checkpointing", s.activation_checkpointing, "keep no layer activations for the backward pass and recompute them there: less memory for about one more forward pass per step, same gradients");
    v("log_interval", s.log_interval, "steps between progress lines", at_least(1));
    v("eval_interval", s.eval_interval, "steps between validations and checkpoints", at_least(1));
    v("max_eval_steps", s.max_eval_steps, "validation segments per evaluation (null: all)", at_least(1));
    v("max_bad_steps", s.max_bad_steps, "consecutive NaN/Inf losses after which training stops", at_least(1));
    v("early_stop", s.early_stop, "end the run after this many validations in a row without a new best validation loss, its summary saying so (null: never); a resumed run counts on from its checkpoint", at_least(1));
    v("keep_snapshots", s.keep_snapshots, "besides last.pt and best.pt, keep the checkpoints of the last N validation steps as checkpoints/step_<S>.pt (xl-average averages them)", at_least(0));
    v("init_from", s.init_from, "start from the weights of this run directory (its best checkpoint) or checkpoint file; parameters it lacks (new heads) keep their fresh values");
    v("init_exclude", s.init_exclude, "with init_from: parameters that keep their fresh values instead, by name pattern as train.freeze (e.g. [word_embedding.weight, lm_bias]: a pretrained body with new embeddings)");
    // clang-format on
  }
};

struct EvalConfig {
  std::string split = "test";
  EvalMode mode = EvalMode::kMemory;
  int64_t batch_size = 10;
  std::optional<int64_t> tgt_len;   // null: train.tgt_len
  std::optional<int64_t> mem_len;   // null: the training attention span
  std::optional<int64_t> clamp_len; // null: the model's
  std::optional<bool> same_length;  // null: the model's
  int64_t stride = 1;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("split", s.split, "split to evaluate", one_of({"valid", "test"}));
    v("mode", s.mode, "memory: segments with recurrence; vanilla: sliding windows of train.tgt_len, the last eval.stride positions scored");
    v("batch_size", s.batch_size, "streams (memory) or windows (vanilla) per evaluation batch", at_least(1));
    v("tgt_len", s.tgt_len, "memory mode: tokens scored per segment (null: train.tgt_len)", greater_than(0));
    v("mem_len", s.mem_len, "memory mode: evaluation memory (null: keep the training attention span)", at_least(0));
    v("clamp_len", s.clamp_len, "relative-distance clamp (null: the model's)", at_least(-1));
    v("same_length", s.same_length, "same attention length for every query (null: the model's)");
    v("stride", s.stride, "vanilla mode: positions scored per window, and the slide (1: the paper's metric; more: reported as @stride=S)", at_least(1));
    // clang-format on
  }
};

struct RunConfig {
  std::string name;               // default: the config file's stem
  std::optional<std::string> dir; // null: runs/<name>
  std::string log_level = "info";
  double progress_seconds = 30.0;
  bool tensorboard = true;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("name", s.name, "run name (default: the config file name)");
    v("dir", s.dir, "run directory (null: runs/<run.name>)");
    v("log_level", s.log_level, "console log level", one_of({"trace", "debug", "info", "warn", "error"}));
    v("tensorboard", s.tensorboard, "also write every metrics.jsonl record to a TensorBoard event file in the run directory (tensorboard --logdir runs/)");
    v("progress_seconds", s.progress_seconds, "longest time without a progress line (done/total, tok/s, elapsed, ETA) in training, validation and evaluation", greater_than(0.0));
    // clang-format on
  }
};

/// The whole resolved configuration.
struct Config {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  EvalConfig eval;
  RunConfig run;
  /// Where each key path was set ("model.d_model" -> file:line); keys left at their default are
  /// absent.
  std::map<std::string, Source> sources;
  /// The file the config was loaded from ("" when built in code).
  std::string origin;

  template <class Self, class V>
  static void sections(Self& s, V&& v) {
    v("model", s.model);
    v("data", s.data);
    v("train", s.train);
    v("eval", s.eval);
    v("run", s.run);
  }

  /// Where `key` was set, for messages: "file:line"; a key left at its default: the file
  /// loaded ("default" for a config built in code).
  std::string where(const std::string& key) const;
};

} // namespace xl::config
