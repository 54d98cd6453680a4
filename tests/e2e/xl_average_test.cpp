// xl-average as a user runs it: the newest snapshots averaged into an evaluable checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "e2e_util.h"
#include "test_util.h"
#include "xl/config/config.h"
#include "xl/io/archive.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/run_dir.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

// The model weights of a checkpoint, by name.
std::map<std::string, torch::Tensor> checkpoint_weights(const fs::path& path) {
  torch::serialize::InputArchive archive;
  run::load_checkpoint(path, archive);
  const auto config = config::load(
      std::string(kSourceDir) + "/configs/transformer_xl/tiny.yaml",
      {"data.dir=" + corpus_dir().string()});
  auto model = models::build_model(config, models::open_dataset(config)->vocab_size());
  io::read_module(archive, "model", *model, path.string());
  std::map<std::string, torch::Tensor> weights;
  for (const auto& item : model->named_parameters()) {
    weights[item.key()] = item.value().detach().clone();
  }
  return weights;
}

// train.keep_snapshots keeps the newest N validation checkpoints; xl-average averages them into
// a checkpoint that xl-eval evaluates.
TEST(Snapshots, TheNewestAreKeptAndAveragedIntoAnEvaluableCheckpoint) {
  TempDir dir;
  const fs::path run = dir / "r";
  const auto trained = run_command(train_command(run, "--set train.keep_snapshots=3"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  std::vector<std::string> kept;
  for (const auto& path : run::paths_of(run).snapshots()) {
    kept.push_back(path.filename().string());
  }
  EXPECT_EQ(kept, (std::vector<std::string>{"step_20.pt", "step_30.pt", "step_40.pt"}));

  const std::string average = std::string(kBinDir) + "/xl-average --run " + run.string();
  const auto averaged = run_command(average + " --last 2", dir.path());
  ASSERT_EQ(averaged.status, 0) << averaged.output;
  EXPECT_THAT(averaged.output, HasSubstr("averaged 2 checkpoints (step_30.pt, step_40.pt)"));
  const auto a = checkpoint_weights(run / "checkpoints/step_30.pt");
  const auto b = checkpoint_weights(run / "checkpoints/step_40.pt");
  const auto mean = checkpoint_weights(run / "checkpoints/averaged.pt");
  ASSERT_EQ(mean.size(), a.size());
  for (const auto& [name, value] : mean) {
    EXPECT_TRUE(torch::allclose(value, (a.at(name) + b.at(name)) / 2, 1e-6, 1e-7)) << name;
  }
  EXPECT_FALSE(torch::equal(mean.begin()->second, b.begin()->second));
  torch::serialize::InputArchive archive;
  EXPECT_EQ(run::load_checkpoint(run / "checkpoints/averaged.pt", archive).step, 40);

  const auto evaluated = run_command(
      std::string(kBinDir) + "/xl-eval --run " + run.string() +
          " --checkpoint averaged --max-steps 2",
      dir.path());
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  EXPECT_THAT(evaluated.output, HasSubstr("checkpoints/averaged.pt (step 40)"));
  const auto missing = run_command(
      std::string(kBinDir) + "/xl-eval --run " + run.string() + " --checkpoint step_10",
      dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("holds: averaged, best, last, step_20, step_30, step_40"));
  const auto overwrite =
      run_command(average + " --checkpoints step_30 step_40 --out step_40", dir.path());
  EXPECT_EQ(overwrite.status, 2);
  EXPECT_THAT(overwrite.output, HasSubstr("the trainer writes checkpoints/step_40.pt"));
  // More snapshots than the run holds, or one checkpoint twice, would weigh silently.
  const auto too_many = run_command(average + " --last 5 --out five", dir.path());
  EXPECT_EQ(too_many.status, 2);
  EXPECT_THAT(
      too_many.output,
      HasSubstr("--last 5: " + run.string() + " holds 3 snapshots (step_20, step_30, step_40)"));
  const auto twice = run_command(
      average + " --checkpoints step_30 " + (run / "checkpoints/step_30.pt").string() +
          " --out twice",
      dir.path());
  EXPECT_EQ(twice.status, 2);
  EXPECT_THAT(twice.output, HasSubstr("twice (step_30 and "));
  // Another model's checkpoint is refused.
  const auto other = run_command(
      train_command(dir / "other", "--set model.d_model=16 --stop-at-step 10"), dir.path());
  ASSERT_EQ(other.status, 0) << other.output;
  const auto mixed = run_command(
      average + " --out mixed --checkpoints step_40 " +
          (dir / "other/checkpoints/last.pt").string(),
      dir.path());
  EXPECT_EQ(mixed.status, 2);
  EXPECT_THAT(mixed.output, HasSubstr("model.d_model"));

  // The two runs side by side: the key that differs is a column.
  const auto compared = run_command(
      std::string(kBinDir) + "/xl-compare " + run.string() + " " + (dir / "other").string() +
          " --csv table.csv --plot curves.png",
      dir.path());
  ASSERT_EQ(compared.status, 0) << compared.output;
  EXPECT_THAT(compared.output, HasSubstr("| best valid ppl |"));
  EXPECT_THAT(compared.output, HasSubstr(" model.d_model |"));
  EXPECT_THAT(read_text(dir / "table.csv"), HasSubstr(",model.d_model"));
  EXPECT_EQ(read_text(dir / "curves.png").substr(1, 3), "PNG");
}

} // namespace
} // namespace xl::test
