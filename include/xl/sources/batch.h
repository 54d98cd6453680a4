// What a batch source hands a model: named fields, time-major ([len, batch, ...]) like the
// modules. A family fills the fields it uses and leaves the others undefined; each model checks
// the ones it needs.
//
//   field           shape       type     who fills it
//   tokens          [L, B]      int64    every family
//   targets         [T, B]      int64    language models: the next token of each of the last
//                                        T <= L input positions (the first L - T are context);
//                                        XLNet pretraining: [P, B], the input token at each
//                                        predicted position (target_mapping), 0 for padding
//   target_mask     [T, B]      bool     padded targets (XLNet's num_predict): true = counted;
//                                        undefined: every target counts
//   segment_ids     [L, B]      int64    XLNet: the segment of each input position
//   padding         [L, B]      bool     XLNet classification: true = a pad position, which no
//                                        query attends to
//   reversed        [B]         bool     XLNet bi_data: the row reads its stream backwards, so
//                                        its relative positions are negated
//   perm_mask       [L, L, B]   bool     XLNet pretraining: true = position i may not see j
//   target_mapping  [P, L, B]   float    XLNet pretraining: one-hot input position of each of
//                                        the P predictions
//   labels          [B]         int64    classification: the class of each row
//   target_index    [T, B]      int64    where each target sits in the token sequence the source
//                                        reads (-1: padding), for listing each token's score
//                                        (xl-eval --per-token); labelled texts: [1, B], the
//                                        example each row holds; undefined: not known
//   n_targets       host int             targets that count, so that nobody syncs to count them
//   host            Batch                the same batch on the CPU, for a batch moved to a GPU
//                                        (ids whose values the host needs: nn/bins.h)
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace xl::sources {

struct Batch {
  torch::Tensor tokens;
  torch::Tensor targets;
  torch::Tensor target_mask;
  torch::Tensor segment_ids;
  torch::Tensor padding;
  torch::Tensor reversed;
  torch::Tensor perm_mask;
  torch::Tensor target_mapping;
  torch::Tensor labels;
  torch::Tensor target_index;
  int64_t n_targets = 0;
  /// what to() moved to a GPU, still on the CPU (null: this batch is on the CPU)
  std::shared_ptr<const Batch> host;

  /// Rows (B).
  int64_t batch_size() const;
  /// Every defined field on `device`; to a GPU without making the host wait (from page-locked
  /// copies), keeping the CPU batch as `host`.
  Batch to(const torch::Device& device) const;
  /// The batch on the CPU: `host`, or this batch.
  const Batch& on_host() const {
    return host ? *host : *this;
  }
  /// Rows [start, start + size) of every field, with their targets counted again. A batch with a
  /// target mask must still be on the CPU: split first, then move each part.
  Batch narrow(int64_t start, int64_t size) const;
  /// `chunks` equal parts along the batch dimension (batch_size() must divide evenly).
  std::vector<Batch> split(int64_t chunks) const;
};

/// The defined fields under their names in the table above (how batches are written to files).
std::map<std::string, torch::Tensor> named_fields(const Batch& batch);
/// The batch of named_fields() (absent fields stay undefined), its targets counted.
Batch batch_from_fields(const std::map<std::string, torch::Tensor>& fields);

/// The targets that count in `batch`, from its mask or its shapes (host tensors only).
int64_t count_targets(const Batch& batch);

} // namespace xl::sources
