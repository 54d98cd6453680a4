// Where the trainer and the evaluator get their batches. A source walks its data in passes
// (epochs); it knows whether consecutive batches continue the same streams row by row, which is
// what lets a model carry memory from one batch to the next; and it saves its position and random
// state into checkpoints, so that a resumed run reads exactly the batches it would have read.
//
//   source            batches                                     memory   used for
//   OrderedSegments   B contiguous streams, T tokens at a time      yes      Transformer-XL
//                                                                          training, evaluation
//   SlidingWindows    windows of W tokens, the last S scored,       no       the vanilla
//                     then slide by S                                         (fixed-context) eval
//   RandomWindows     B windows of W tokens at random offsets       no       fixed-context
//                                                                          training
// Permutation records (XLNet pretraining) and labelled texts (classification) are sources too.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "xl/sources/batch.h"

namespace xl::sources {

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  /// The next batch of the current pass (on the CPU), or nullopt when the pass is over; the call
  /// after a nullopt starts the next pass.
  virtual std::optional<Batch> next() = 0;
  /// Whether each batch continues the streams of the one before, row by row.
  virtual bool continues_streams() const = 0;
  /// Batches in one pass.
  virtual int64_t batches_per_pass() const = 0;
  /// Passes started before the current one.
  virtual int64_t epoch() const = 0;
  /// What the batches are, for logs: "ordered segments: 16 streams x 64 tokens".
  virtual std::string describe() const = 0;
  /// Appended to metric names when the scores approximate the paper's metric: "@stride=8".
  virtual std::string metric_qualifier() const {
    return "";
  }

  /// Position and random state, under "data." keys of a checkpoint.
  virtual void save(torch::serialize::OutputArchive& archive) const = 0;
  /// Restores what save() wrote. A checkpoint of another kind of source, or of other sizes, is a
  /// UserError.
  virtual void load(torch::serialize::InputArchive& archive) = 0;
};

/// next(), going on into the next pass when the current one is over (training cycles).
Batch next_cycling(BatchSource& source);

} // namespace xl::sources
