// A training step never makes the host wait for the device: every family's steps read no value
// (item, nonzero, a copy to the CPU) between the trainer's logging steps; read_steps reads them
// all at once. Counted on the CPU, where the same reads would each wait for a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "train/family_checks.h"
#include "xl/config/config.h"

namespace xl::train {
namespace {

// Transformer-XL with clipping (its adaptive embedding and softmax have two tail bins) and with
// batch chunks; every family's tiny configs are in the family contract
// (models/family_contract_test.cpp).
TEST(TrainStep, ClippedAndChunkedStepsReadNothingFromTheDevice) {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"train.clip=0.25"}, {"train.clip=0", "train.batch_chunk=2"}}) {
    SCOPED_TRACE(sets.back());
    auto all = sets;
    all.emplace_back("train.threads=1");
    test::expect_steps_read_nothing(
        config::load(std::string(test::kSourceDir) + "/configs/transformer_xl/tiny.yaml", all));
  }
}

} // namespace
} // namespace xl::train
