// The apps as a user runs them: exit codes, messages and files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string app(const std::string& name) {
  return std::string(kBinDir) + "/" + name;
}

std::string config_file(const std::string& relative) {
  return std::string(kSourceDir) + "/" + relative;
}

TEST(XlPrep, EncodesWikiText2WithGoldenCounts) {
  TempDir dir;
  const auto r = run_command(
      app("xl-prep") + " --train " +
          testdata("wikitext-2/wiki.train.tokens").string() + " --valid " +
          testdata("wikitext-2/wiki.valid.tokens").string() + " --test " +
          testdata("wikitext-2/wiki.test.tokens").string() + " --out wt2",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("vocabulary: 33278 word tokens"));
  EXPECT_THAT(r.output, HasSubstr("train: 2088628 tokens"));
  EXPECT_THAT(r.output, HasSubstr("valid: 217646 tokens"));
  EXPECT_THAT(r.output, HasSubstr("test: 245569 tokens"));
  // 2-byte tokens after a 64-byte header.
  EXPECT_EQ(fs::file_size(dir / "wt2/train.bin"), 64u + 2u * 2088628u);
}

TEST(XlPrep, ByteFormatOnEnwik8Prefix) {
  TempDir dir;
  const auto r = run_command(
      app("xl-prep") + " --format byte --train " +
          testdata("enwik8/enwik8-prefix-1M").string() + " --out e8",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("train: 1000000 tokens"));
  EXPECT_THAT(
      read_text(dir / "e8/vocab.txt"),
      ::testing::StartsWith("#xl-vocab v1 kind=byte"));
}

TEST(XlPrep, MissingAndEmptyInputsExitTwoWithAClearMessage) {
  TempDir dir;
  auto r =
      run_command(app("xl-prep") + " --train nope.txt --out o", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("error: corpus file not found: nope.txt"));
  write_file(dir / "empty.txt", "");
  r = run_command(app("xl-prep") + " --train empty.txt --out o", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("corpus file is empty: empty.txt"));
  r = run_command(app("xl-prep") + " --out o", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("--train is required"));
}

TEST(XlTrain, DumpConfigPrintsResolvedYamlThatLoadsBack) {
  TempDir dir;
  const std::string cfg = config_file("configs/txl/wt2_small.yaml");
  auto r = run_command(
      app("xl-train") + " --config " + cfg +
          " --set model.n_layer=3 --set train.lr=5e-4 --dump-config",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("  n_layer: 3\n"));
  EXPECT_THAT(r.output, HasSubstr("  lr: 0.0005\n"));
  EXPECT_THAT(r.output, HasSubstr("  name: \"wt2_small\"\n"));
  write_file(dir / "dumped.yaml", r.output);
  const auto again = run_command(
      app("xl-train") + " --config dumped.yaml --dump-config", dir.path());
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(again.output, r.output);
}

TEST(XlTrain, ConfigErrorsExitTwoWithOneLineAndNoStackTrace) {
  TempDir dir;
  const std::string cfg = config_file("configs/txl/wt2_small.yaml");
  const auto r = run_command(
      app("xl-train") + " --config " + cfg + " --set model.n_layers=3",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.output,
      "error: --set model.n_layers=3: unknown key 'model.n_layers' (did you mean "
      "'model.n_layer'?)\n");
  const auto missing =
      run_command(app("xl-train") + " --config nope.yaml", dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("config file not found: nope.yaml"));
  EXPECT_THAT(missing.output, Not(HasSubstr("Exception raised from")));
  const auto usage = run_command(app("xl-train") + " --bogus-flag", dir.path());
  EXPECT_EQ(usage.status, 2);
}

// With no memory, same_length hides every key (NaN where Hugging Face masks with -1e30 and
// leaks future tokens): refused up front, by training and by the parity check alike.
TEST(XlTrain, SameLengthWithoutMemoryIsRefusedBeforeAnythingRuns) {
  TempDir dir;
  const std::string flags = " --config " +
      config_file("configs/txl/tiny.yaml") +
      " --set model.transformer_xl.same_length=true --set model.transformer_xl.mem_len=0";
  const auto train = run_command(app("xl-train") + flags, dir.path());
  EXPECT_EQ(train.status, 2);
  EXPECT_THAT(
      train.output,
      HasSubstr(
          "model.transformer_xl.same_length: needs model.transformer_xl.mem_len > 0"));
  EXPECT_FALSE(fs::exists(dir / "runs"));
  const auto parity = run_command(
      "XL_BIN=" + std::string(kBinDir) + " XL_PYTHON=" + kPython + " " +
          kSourceDir + "/scripts/parity/check.sh" +
          flags.substr(std::string(" --config").size()),
      dir.path());
  EXPECT_EQ(parity.status, 2);
  EXPECT_THAT(
      parity.output, HasSubstr("needs model.transformer_xl.mem_len > 0"));
}

TEST(XlTrain, PrintSchemaDocumentsEveryKey) {
  const auto r = run_command(app("xl-train") + " --print-schema");
  ASSERT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("| `model.transformer_xl.mem_len` |"));
  EXPECT_THAT(r.output, HasSubstr("| `eval.same_length` |"));
}

// What --help suggests works: several --set values, --version everywhere, defaults in --help,
// --print-schema without the flags an evaluation needs.
TEST(XlApps, VersionDefaultsSchemaAndSeveralOverridesAsHelpSays) {
  TempDir dir;
  for (const char* name :
       {"xl-train",
        "xl-eval",
        "xl-import",
        "xl-prep",
        "xl-bench",
        "xl-average"}) {
    const auto r = run_command(app(name) + " --version");
    EXPECT_EQ(r.status, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, ::testing::StartsWith("xl ")) << name;
    EXPECT_THAT(r.output, HasSubstr("LibTorch ")) << name;
  }
  // A misspelt allocator choice is named, not silently ignored.
  EXPECT_THAT(
      run_command("XL_ALLOCATOR=mallocc " + app("xl-train") + " --version")
          .output,
      HasSubstr("warning: XL_ALLOCATOR=mallocc is not a choice"));
  for (const char* name : {"xl-eval", "xl-import"}) {
    const auto r = run_command(app(name) + " --print-schema");
    EXPECT_EQ(r.status, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("| `run.progress_seconds` |")) << name;
  }
  EXPECT_THAT(
      run_command(app("xl-eval") + " --help").output,
      HasSubstr("--checkpoint TEXT=best"));
  const std::string cfg = config_file("configs/txl/wt2_small.yaml");
  const auto several = run_command(
      app("xl-train") + " --config " + cfg +
          " --set model.n_layer=3 train.lr=5e-4 --set train.clip=0.5 --dump-config",
      dir.path());
  ASSERT_EQ(several.status, 0) << several.output;
  EXPECT_THAT(several.output, HasSubstr("  n_layer: 3\n"));
  EXPECT_THAT(several.output, HasSubstr("  lr: 0.0005\n"));
  EXPECT_THAT(several.output, HasSubstr("  clip: 0.5\n"));
  // A short run names the override it also needs.
  const auto short_run = run_command(
      app("xl-train") + " --config " + cfg +
          " --set train.max_step=10 --dump-config",
      dir.path());
  EXPECT_EQ(short_run.status, 2);
  EXPECT_THAT(short_run.output, HasSubstr("--set train.warmup_step=1"));
}

TEST(XlTrain, MissingPreparedDataIsAClearError) {
  TempDir dir;
  const auto r = run_command(
      app("xl-train") + " --config " +
          config_file("configs/txl/wt2_small.yaml") + " --set data.dir=absent",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("data.dir not found: absent ("));
  EXPECT_THAT(
      r.output,
      HasSubstr("taken from the current directory, " + dir.path().string()));
  // The data is opened before the run directory is made: nothing is left behind.
  EXPECT_FALSE(fs::exists(dir / "runs/wt2_small"));
}

// xl-bench needs no prepared data: every family runs on random data of its shapes, and a mode
// the family lacks is skipped with the reason.
TEST(XlBench, MeasuresEveryFamilyOnRandomData) {
  TempDir dir;
  for (const std::string config :
       {"configs/txl/tiny.yaml",
        "configs/xlnet/tiny.yaml",
        "configs/xlnet/tiny_cls.yaml",
        "configs/char/tiny.yaml"}) {
    SCOPED_TRACE(config);
    const auto r = run_command(
        app("xl-bench") + " --config " + config_file(config) +
            " --n-token 3000 --warmup 1 --steps 2 --json bench.json --force",
        dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
    const auto json =
        nlohmann::json::parse(read_text(dir / "bench.json"))["results"];
    const bool txl = config.find("txl") != std::string::npos;
    ASSERT_EQ(json.size(), txl ? 3U : 2U) << json.dump();
    for (const auto& record : json) {
      EXPECT_GT(record["tokens_per_s"].get<double>(), 0.0) << record.dump();
      EXPECT_GE(
          record["input_tokens_per_s"].get<double>(),
          record["tokens_per_s"].get<double>())
          << record.dump();
    }
    if (config.find("xlnet") != std::string::npos) {
      EXPECT_THAT(r.output, HasSubstr("vanilla: skipped"));
    }
    if (config.find("char") != std::string::npos) { // no memory
      EXPECT_THAT(r.output, HasSubstr("eval: skipped"));
    }
  }
  // The memory evaluation with and without its kept projections, in one run; a mode it does
  // not know is refused with the list, not skipped.
  const auto both = run_command(
      app("xl-bench") + " --config " + config_file("configs/txl/tiny.yaml") +
          " --n-token 3000 --warmup 1 --steps 2 --modes eval,eval_recompute",
      dir.path());
  ASSERT_EQ(both.status, 0) << both.output;
  EXPECT_THAT(both.output, HasSubstr("info eval "));
  EXPECT_THAT(both.output, HasSubstr("info eval_recompute "));
  const auto typo = run_command(
      app("xl-bench") + " --config " + config_file("configs/txl/tiny.yaml") +
          " --modes trian",
      dir.path());
  EXPECT_EQ(typo.status, 2);
  EXPECT_THAT(typo.output, HasSubstr("unknown mode 'trian'"));
}

} // namespace
} // namespace xl::test
