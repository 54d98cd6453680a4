// What every app shares (app/cli): version, defaults, schema and overrides as the help says;
// bad flags and values as one-line errors; tools that never write over a run or outside their
// folder, and check the numbers they take before they work; xl-train's config errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Flags and values that used to get "internal error" or a silent result.
TEST(Integrity, BadFlagsAndValuesAreOneLineErrors) {
  TempDir dir;
  write_file(dir / "afile", "not a folder\n");
  const std::string train =
      std::string(kBinDir) + "/xl-train --config " + kSourceDir + "/configs/txl/tiny.yaml ";
  for (const auto& [command, message] : std::vector<std::pair<std::string, std::string>>{
           {train + "--stop-at-step 0", "--stop-at-step: expected a count >= 1, found '0'"},
           {std::string(kBinDir) + "/xl-eval --run r --max-steps 0",
            "--max-steps: expected a count >= 1, found '0'"},
           {train + "--set train.lr=1e400 --dump-config",
            "--set train.lr=1e400: train.lr: expected a number > 0, found '1e400'"},
           {train + "--set train.lr=1e-400 --dump-config",
            "--set train.lr=1e-400: train.lr: expected a number > 0"},
           {train + "--set model.n_layer.x=3 --dump-config",
            "error: --set model.n_layer.x=3: model.n_layer: expected an integer"},
           {std::string(kBinDir) + "/xl-prep --format byte --train afile --out afile",
            "--out afile is a file"}}) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
  }
}

// Every file of a run (path -> bytes), to show that a tool left it as it was.
std::map<std::string, std::string> run_files(const fs::path& run) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(run)) {
    if (entry.is_regular_file() && entry.path().filename() != ".lock") {
      files[fs::relative(entry.path(), run).string()] = read_text(entry.path());
    }
  }
  return files;
}

// The outputs rule (run/outputs.h) through every tool that writes: a run's files are never an
// output (with --force neither), names are plain, an existing output needs --force, the
// check comes before the work, and a run's config.yaml trains only its own run. The run's
// bytes are compared before and after all of it.
TEST(Integrity, ToolsNeverWriteOverARunOrOutsideTheirFolder) {
  TempDir dir;
  const auto trained =
      run_command(train_command(dir / "r", "--set train.keep_snapshots=2"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const auto before = run_files(dir / "r");
  const std::string bin = std::string(kBinDir) + "/";
  for (const auto& [command, message] : std::vector<std::pair<std::string, std::string>>{
           {"xl-average --run r --last 2 --out best", "the trainer writes checkpoints/best.pt"},
           {"xl-average --run r --last 2 --out last --force", "the trainer writes"},
           {"xl-average --run r --last 2 --out step_30", "the trainer writes"},
           {"xl-average --run r --last 2 --out ../../x", "expected a plain name"},
           {"xl-average --run r --last 2 --out ''", "expected a plain name"},
           {"xl-compare r --csv r/metrics.jsonl --force", "a file of the run in"},
           {"xl-compare r --plot r/checkpoints/best.pt", "(its checkpoints)"},
           {"xl-compare r --csv r/config.yaml", "(its config)"},
           {"xl-compare r --csv t.csv --plot ./t.csv", "name the same file"},
           {"xl-eval --run r --dump-batches r/checkpoints/last.pt --force", "a file of the run in"},
           {"xl-export --run r --out r", "is the run in"},
           {"xl-export --run r --out r/checkpoints/hf --force", "is inside the run in"},
           {"xl-prep --train afile --out r", "is the run in"},
           {"xl-train -c r/config.yaml --set run.name=.. --set run.dir=null",
            "run.name: expected a plain name"},
           {"user", "holds files that are not a run's"},
           {"xl-train -c copy/config.yaml --resume", "is the config of the run in"},
       }) {
    SCOPED_TRACE(command);
    if (command == "user") {
      write_file(dir / "user/config.yaml", "the user's own notes\n");
    }
    if (command.find("copy/") != std::string::npos && !fs::exists(dir / "copy")) {
      fs::copy(dir / "r", dir / "copy", fs::copy_options::recursive);
    }
    write_file(dir / "afile", "text\n");
    // "user": a new run into a folder of the user's files
    const auto r =
        run_command(command == "user" ? train_command(dir / "user") : bin + command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
    EXPECT_THAT(r.output, Not(HasSubstr("evaluating"))); // refused before the work
  }
  EXPECT_EQ(read_text(dir / "user/config.yaml"), "the user's own notes\n");
  EXPECT_EQ(run_files(dir / "r"), before);
  EXPECT_EQ(run_files(dir / "copy"), before);

  // Outputs of their own: a second write needs --force.
  for (const std::string command :
       {"xl-average --run r --last 2 --out avg",
        "xl-compare r --csv t.csv --plot c.png",
        "xl-eval --run r --max-steps 1 --dump-batches b/batches.safetensors",
        "xl-export --run r --out hf"}) {
    SCOPED_TRACE(command);
    const auto first = run_command(bin + command, dir.path());
    ASSERT_EQ(first.status, 0) << first.output;
    const auto again = run_command(bin + command, dir.path());
    EXPECT_EQ(again.status, 2) << again.output;
    EXPECT_THAT(again.output, HasSubstr("pass --force"));
    const auto forced = run_command(bin + command + " --force", dir.path());
    EXPECT_EQ(forced.status, 0) << forced.output;
  }

  // Another folder's checkpoint evaluated into this run is recorded, and compared, as such.
  const auto foreign = run_command(
      bin + "xl-eval --run r --max-steps 1 --checkpoint copy/checkpoints/best.pt", dir.path());
  ASSERT_EQ(foreign.status, 0) << foreign.output;
  EXPECT_THAT(foreign.output, HasSubstr("is not a checkpoint of r"));
  const auto compared = run_command(bin + "xl-compare r", dir.path());
  EXPECT_THAT(compared.output, HasSubstr("test/memory (partial) (checkpoint from elsewhere) ppl"));
}

// Every number a tool takes is checked before it works, with a message of its own: NaN passes
// CLI11's ranges, whose messages print the largest double; a temperature of 1e-300 overflows;
// the samples are rows of the batch the memory check counts; SentencePiece asserts its own
// limits deep inside its trainer.
TEST(Integrity, NumbersAToolTakesAreCheckedBeforeItWorks) {
  TempDir dir;
  const auto trained = run_command(train_command(dir / "r", "--stop-at-step 2"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  write_file(dir / "afile", "한국어 문장입니다.\n");
  const std::string sample = std::string(kBinDir) + "/xl-sample --run r --tokens 2 ";
  const std::string prep = std::string(kBinDir) + "/xl-prep --format xlnet --train afile --out p ";
  for (const auto& [command, message] : std::vector<std::pair<std::string, std::string>>{
           {sample + "--temperature nan", "--temperature: expected a finite number, found 'nan'"},
           {sample + "--temperature 1e-300", "--temperature 1e-300: expected 0"},
           {sample + "--temperature -1", "--temperature -1: expected 0"},
           {sample + "--temperature inf", "--temperature: expected a finite number"},
           {sample + "--top-p nan", "--top-p: expected a finite number, found 'nan'"},
           {sample + "--top-p 0", "--top-p 0: expected a probability above 0"},
           {sample + "--seed -1", "--seed: expected a count >= 0, found '-1'"},
           {sample + "--seed 99999999999999999999999",
            "--seed: expected a count >= 0, found '99999999999999999999999'"},
           {sample + "--temperature ''", "--temperature: expected a finite number, found ''"},
           {sample + "--top-k 99999999999999999999",
            "--top-k: expected a count >= 0, found '99999999999999999999'"},
           {sample + "--top-k -1", "--top-k: expected a count >= 0, found '-1'"},
           {sample + "--samples 100000000", "sampling needs about"},
           {prep + "--vocab-size 0", "--vocab-size 0: expected more than the 17 special"},
           {prep + "--character-coverage 2", "--character-coverage 2: expected a fraction"},
           {std::string(kBinDir) + "/xl-prep --train afile --out q --min-freq -1",
            "--min-freq: expected a count >= 0, found '-1'"},
           {std::string(kBinDir) + "/xl-prep --format byte --train afile --out q --min-freq 2",
            "--min-freq applies to --format word only, not to --format byte"},
           {std::string(kBinDir) + "/xl-prep --train afile --out q --vocab-size 100",
            "--vocab-size applies to --format xlnet only, not to --format word"},
           {prep + "--holdout 5", "--holdout applies to --format nsmc only"},
       }) {
    SCOPED_TRACE(command);
    const auto r = run_command(command, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
    EXPECT_THAT(r.output, Not(HasSubstr("Internal")));
    // A number of 20 digits or more other than the one given: a range message's double.
    auto said = r.output;
    for (const std::string given : {"99999999999999999999999", "99999999999999999999"}) {
      for (size_t at; (at = said.find(given)) != std::string::npos;) {
        said.erase(at, given.size());
      }
    }
    EXPECT_FALSE(std::regex_search(said, std::regex("[0-9]{20}")))
        << "a number of 20 digits or more: " << r.output;
  }
}

// What --help suggests works: several --set values, --version everywhere, defaults in --help,
// --print-schema without the flags an evaluation needs.
TEST(XlApps, VersionDefaultsSchemaAndSeveralOverridesAsHelpSays) {
  TempDir dir;
  for (const char* name :
       {"xl-train", "xl-eval", "xl-import", "xl-prep", "xl-bench", "xl-average"}) {
    const auto r = run_command(app(name) + " --version");
    EXPECT_EQ(r.status, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, ::testing::StartsWith("xl ")) << name;
    EXPECT_THAT(r.output, HasSubstr("LibTorch ")) << name;
  }
  // A misspelt allocator choice is named, not silently ignored.
  EXPECT_THAT(
      run_command("XL_ALLOCATOR=mallocc " + app("xl-train") + " --version").output,
      HasSubstr("warning: XL_ALLOCATOR=mallocc is not a choice"));
  for (const char* name : {"xl-eval", "xl-import"}) {
    const auto r = run_command(app(name) + " --print-schema");
    EXPECT_EQ(r.status, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("| `run.progress_seconds` |")) << name;
  }
  EXPECT_THAT(run_command(app("xl-eval") + " --help").output, HasSubstr("--checkpoint TEXT=best"));
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
      app("xl-train") + " --config " + cfg + " --set train.max_step=10 --dump-config", dir.path());
  EXPECT_EQ(short_run.status, 2);
  EXPECT_THAT(short_run.output, HasSubstr("--set train.warmup_step=1"));
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
  const auto again =
      run_command(app("xl-train") + " --config dumped.yaml --dump-config", dir.path());
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(again.output, r.output);
}

TEST(XlTrain, ConfigErrorsExitTwoWithOneLineAndNoStackTrace) {
  TempDir dir;
  const std::string cfg = config_file("configs/txl/wt2_small.yaml");
  const auto r =
      run_command(app("xl-train") + " --config " + cfg + " --set model.n_layers=3", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.output,
      "error: --set model.n_layers=3: unknown key 'model.n_layers' (did you mean "
      "'model.n_layer'?)\n");
  const auto missing = run_command(app("xl-train") + " --config nope.yaml", dir.path());
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
  const std::string flags = " --config " + config_file("configs/txl/tiny.yaml") +
      " --set model.transformer_xl.same_length=true --set model.transformer_xl.mem_len=0";
  const auto train = run_command(app("xl-train") + flags, dir.path());
  EXPECT_EQ(train.status, 2);
  EXPECT_THAT(
      train.output,
      HasSubstr("model.transformer_xl.same_length: needs model.transformer_xl.mem_len > 0"));
  EXPECT_FALSE(fs::exists(dir / "runs"));
  const auto parity = run_command(
      "XL_BIN=" + std::string(kBinDir) + " XL_PYTHON=" + kPython + " " + kSourceDir +
          "/scripts/parity/check.sh" + flags.substr(std::string(" --config").size()),
      dir.path());
  EXPECT_EQ(parity.status, 2);
  EXPECT_THAT(parity.output, HasSubstr("needs model.transformer_xl.mem_len > 0"));
}

TEST(XlTrain, PrintSchemaDocumentsEveryKey) {
  const auto r = run_command(app("xl-train") + " --print-schema");
  ASSERT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("| `model.transformer_xl.mem_len` |"));
  EXPECT_THAT(r.output, HasSubstr("| `eval.same_length` |"));
}

TEST(XlTrain, MissingPreparedDataIsAClearError) {
  TempDir dir;
  const auto r = run_command(
      app("xl-train") + " --config " + config_file("configs/txl/wt2_small.yaml") +
          " --set data.dir=absent",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("data.dir not found: absent ("));
  EXPECT_THAT(r.output, HasSubstr("taken from the current directory, " + dir.path().string()));
  // The data is opened before the run directory is made: nothing is left behind.
  EXPECT_FALSE(fs::exists(dir / "runs/wt2_small"));
}

} // namespace
} // namespace xl::test
