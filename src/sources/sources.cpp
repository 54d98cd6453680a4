#include "xl/sources/sources.h"

#include "xl/sources/ordered_segments.h"
#include "xl/sources/windows.h"

namespace xl::sources {

std::unique_ptr<BatchSource> make_train_source(
    const config::TrainConfig& train,
    const formats::Tokens& tokens,
    int64_t ext_len) {
  switch (train.sampling) {
    case config::Sampling::kOrdered:
      return std::make_unique<OrderedSegments>(tokens, train.batch_size, train.tgt_len, ext_len);
    case config::Sampling::kRandomWindows:
      return std::make_unique<RandomWindows>(
          tokens, train.tgt_len, train.batch_size, static_cast<uint64_t>(train.seed));
  }
  TORCH_CHECK(false, "unhandled train.sampling");
}

} // namespace xl::sources
