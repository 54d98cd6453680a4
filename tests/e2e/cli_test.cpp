// What every app shares (app/cli): version, defaults, schema and overrides as the help says;
// bad flags and values as one-line errors; tools that never write over a run or outside their
// folder, and check the numbers they take before they work; xl-train's config errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <thread>

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
  const std::string train = std::string(kBinDir) + "/xl-train --config " + kSourceDir +
      "/configs/transformer_xl/tiny.yaml ";
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
            "--out afile is a file"},
           {std::string(kBinDir) +
                "/xl-prep --format word --vocab afile --unk --test afile --out o",
            "--unk and --vocab exclude each other: they build a vocabulary, --vocab reuses one"},
           {std::string(kBinDir) + "/xl-prep --format word --out o",
            "xl-prep has nothing to read: give --train, --valid or --test FILE"},
           {std::string(kBinDir) + "/xl-prep --format nsmc --test afile --holdout 3 --out o",
            "--holdout goes with --train: it carves the valid split out of --train FILE"},
           // A mistyped flag is named with the one meant, not as the required flag it hid.
           {std::string(kBinDir) + "/xl-eval --rnu r", "unknown flag --rnu: did you mean --run?"},
           {train + "--stop-at-stpe=3",
            "unknown flag --stop-at-stpe: did you mean --stop-at-step?"},
           {std::string(kBinDir) + "/xl-predict --run r --file afile --jsno",
            "unknown flag --jsno: did you mean --json?"}}) {
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
// A device, a pipe or a descriptor's link (/dev/stdout with the output redirected to a file) is
// written into as it is, without --force and never replaced; a link to a file stays a link, the
// file it leads to replaced. A missing folder of an output is made.
TEST(Integrity, OutputsWriteThroughDevicesAndKeepLinks) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 4"), dir.path()).status, 0);
  write_file(dir / "t.txt", "the game was released .\n");
  const std::string eval = std::string(kBinDir) + "/xl-eval --run r --file t.txt";
  for (const std::string device : {"/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"}) {
    SCOPED_TRACE(device);
    fs::remove(dir / "out.txt");
    const auto r = run_command(
        "(" + eval + " --json " + device + " --per-token " + device + " >out.txt 2>err.txt)",
        dir.path());
    ASSERT_EQ(r.status, 0) << read_text(dir / "err.txt");
    const auto out = read_text(dir / "out.txt");
    EXPECT_THAT(out, HasSubstr("\"tokens\": 5"));          // the JSON
    EXPECT_THAT(out, HasSubstr("index\ttoken\tlog_prob")); // the listing
    EXPECT_THAT(out, HasSubstr("t.txt | loss"));           // the result line, after them
  }
  EXPECT_TRUE(fs::is_symlink("/dev/stdout"));
  EXPECT_EQ(run_command(eval + " --json /dev/null", dir.path()).status, 0);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // A link to a file: replaced through it, with --force.
  write_file(dir / "real.json", "old\n");
  fs::create_symlink("real.json", dir / "link.json");
  auto r = run_command(eval + " --json link.json", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("link.json exists; pass --force"));
  r = run_command(eval + " --json link.json --force", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_THAT(read_text(dir / "real.json"), HasSubstr("\"tokens\": 5"));
  // A folder not made yet.
  r = run_command(eval + " --per-token new/deeper/t.tsv", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(read_text(dir / "new/deeper/t.tsv"), HasSubstr("index\ttoken"));
}

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
           {"xl-eval --run r --file afile --per-token r/metrics.jsonl", "a file of the run in"},
           {"xl-eval --run r --file afile --json r/config.yaml --force", "(its config)"},
           {"xl-eval --run r --file afile --json t.json --per-token ./t.json",
            "name the same file"},
           {"xl-predict --run r --file afile --out r/train.log", "(its log)"},
           {"xl-export --run r --out r", "is the run in"},
           {"xl-export --run r --out r/checkpoints/hf --force", "is inside the run in"},
           {"xl-export --run r --out data --force", "is a data folder xl-prep wrote"},
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
    if (command.find("--out data") != std::string::npos && !fs::exists(dir / "data")) {
      fs::copy(corpus_dir(), dir / "data", fs::copy_options::recursive);
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
  EXPECT_EQ(read_text(dir / "data/vocab.txt"), read_text(corpus_dir() / "vocab.txt"));
  EXPECT_EQ(run_files(dir / "r"), before);
  EXPECT_EQ(run_files(dir / "copy"), before);

  // Outputs of their own: a second write needs --force.
  for (const std::string command :
       {"xl-average --run r --last 2 --out avg",
        "xl-compare r --csv t.csv --plot c.png",
        "xl-eval --run r --max-steps 1 --dump-batches b/batches.safetensors",
        "xl-eval --run r --file afile --json j/r.json --per-token p.tsv",
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
  EXPECT_THAT(compared.output, HasSubstr("test ppl mem=32 (partial) (checkpoint from elsewhere)"));
}

// A running app keeps its name (ps -o comm, pgrep) once it has bounded its threads' spinning,
// which it does by itself unless the environment sets a wait policy of the user's.
TEST(ProcessStart, AnAppKeepsItsNameAndBoundsTheSpinning) {
  TempDir dir;
  for (const std::string env :
       {"env -u GOMP_SPINCOUNT ", "env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive "}) {
    SCOPED_TRACE(env);
    fs::remove_all(dir / "r");
    const pid_t pid =
        spawn(env + train_command(dir / "r", "--set train.max_step=1000000"), dir.path());
    for (int i = 0; i < 3000 && train_losses(dir / "r").empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string comm = read_text(proc + "/comm");
    std::string environment = read_text(proc + "/environ");
    std::replace(environment.begin(), environment.end(), '\0', '\n');
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    EXPECT_EQ(comm, "xl-train\n");
    if (env.find("OMP_WAIT_POLICY") == std::string::npos) {
      EXPECT_THAT(environment, HasSubstr("\nGOMP_SPINCOUNT=10000\n"));
    } else {
      EXPECT_THAT(environment, Not(HasSubstr("GOMP_SPINCOUNT")));
      EXPECT_THAT(environment, HasSubstr("OMP_WAIT_POLICY=passive"));
    }
  }
}

// The command a tool prints to run next runs as printed, from where the tool ran.
TEST(Integrity, TheNextCommandAToolPrintsRunsAsPrinted) {
  TempDir dir;
  const auto trained = run_command(train_command(dir / "r", "--set train.max_step=6"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const auto at = trained.output.find("evaluate: ");
  ASSERT_NE(at, std::string::npos) << trained.output;
  const std::string next = trained.output.substr(at + 10, trained.output.find('\n', at) - at - 10);
  EXPECT_EQ(next, app("xl-eval") + " --run " + (dir / "r").string());
  const auto evaluated = run_command(next + " --max-steps 1", dir.path());
  EXPECT_EQ(evaluated.status, 0) << evaluated.output;
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
  const std::string prep = std::string(kBinDir) + "/xl-prep --format pieces --train afile --out p ";
  for (const auto& [command, message] : std::vector<std::pair<std::string, std::string>>{
           {sample + "--temperature nan", "--temperature: expected a finite number, found 'nan'"},
           {sample + "--temperature 1e-300", "--temperature 1e-300: expected 0"},
           {sample + "--temperature -1", "--temperature -1: expected 0"},
           {sample + "--temperature inf", "--temperature: expected a finite number"},
           {sample + "--top-p nan", "--top-p: expected a finite number, found 'nan'"},
           {sample + "--top-p 0", "--top-p 0: expected a probability above 0"},
           {sample + "--seed -1", "--seed: expected a count >= 0, found '-1'"},
           {sample + "--seed 99999999999999999999999",
            "--seed: expected a count from 0 to 9223372036854775807 (64 bits), found "
            "'99999999999999999999999'"},
           {sample + "--temperature ''", "--temperature: expected a finite number, found ''"},
           {sample + "--top-k 99999999999999999999",
            "--top-k: expected a count from 0 to 9223372036854775807 (64 bits), found "
            "'99999999999999999999'"},
           {sample + "--top-k -1", "--top-k: expected a count >= 0, found '-1'"},
           {sample + "--samples 100000000", "sampling needs about"},
           {prep + "--vocab-size 0", "--vocab-size 0: expected more than the 17 special"},
           {prep + "--character-coverage 2", "--character-coverage 2: expected a fraction"},
           {std::string(kBinDir) + "/xl-prep --train afile --out q --min-freq -1",
            "--min-freq: expected a count >= 0, found '-1'"},
           {std::string(kBinDir) + "/xl-prep --format byte --train afile --out q --min-freq 2",
            "--min-freq applies to --format word only, not to --format byte"},
           {std::string(kBinDir) + "/xl-prep --train afile --out q --vocab-size 100",
            "--vocab-size applies to --format pieces only, not to --format word"},
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
  int commands = 0;
  for (const auto& entry : fs::directory_iterator(kBinDir)) { // every command: xl-*
    const std::string name = entry.path().filename().string();
    if (name.rfind("xl-", 0) != 0) {
      continue;
    }
    ++commands;
    const auto r = run_command(entry.path().string() + " --version");
    EXPECT_EQ(r.status, 0) << name << ": " << r.output;
    EXPECT_THAT(r.output, ::testing::StartsWith("xl ")) << name;
    EXPECT_THAT(r.output, HasSubstr("LibTorch ")) << name;
  }
  EXPECT_GE(commands, 12); // the apps and xl-parity-check
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
  const std::string cfg = config_file("configs/transformer_xl/wt2_small.yaml");
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
  const std::string cfg = config_file("configs/transformer_xl/wt2_small.yaml");
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
  const std::string cfg = config_file("configs/transformer_xl/wt2_small.yaml");
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
  const std::string flags = " --config " + config_file("configs/transformer_xl/tiny.yaml") +
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

// scripts/getdata.sh without a network (here: a proxy that refuses) ends with one line: what it
// tried, and the xl-prep command for the files at hand.
TEST(Getdata, OfflineItSaysWhatItTriedAndHowToPrepareFilesAtHand) {
  if (fs::exists(fs::path(kSourceDir) / "data/prepared/raw/text8.zip")) {
    GTEST_SKIP() << "text8.zip was downloaded: getdata.sh would prepare it";
  }
  const auto r = run_command(
      "http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 XL_BUILD_DIR=" +
      fs::path(kBinDir).parent_path().string() + " bash " + kSourceDir +
      "/scripts/getdata.sh text8");
  EXPECT_EQ(r.status, 1) << r.output;
  const std::string last = r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1);
  EXPECT_THAT(
      last,
      ::testing::StartsWith("getdata: could not download http://mattmahoney.net/dc/text8.zip ("));
  EXPECT_THAT(last, HasSubstr("offline?). With the files at hand, prepare them with: "));
  EXPECT_THAT(
      last, HasSubstr("xl-prep --force --format byte --vocab-from all --train text8.train"));
  EXPECT_FALSE(fs::exists(fs::path(kSourceDir) / "data/prepared/raw/text8.zip.part"));
}

TEST(XlTrain, MissingPreparedDataIsAClearError) {
  TempDir dir;
  const auto r = run_command(
      app("xl-train") + " --config " + config_file("configs/transformer_xl/wt2_small.yaml") +
          " --set data.dir=absent",
      dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("data.dir not found: absent ("));
  EXPECT_THAT(r.output, HasSubstr("taken from the current directory, " + dir.path().string()));
  EXPECT_THAT(r.output, HasSubstr("prepare it with xl-prep (README: Train, evaluate, ablate)"));
  // The data is opened before the run directory is made: nothing is left behind.
  EXPECT_FALSE(fs::exists(dir / "runs/wt2_small"));
  // A config's own corpus names the script that prepares it.
  const auto wt103 = run_command(
      app("xl-train") + " --config " + config_file("configs/transformer_xl/wt103_base.yaml"),
      dir.path());
  EXPECT_EQ(wt103.status, 2);
  EXPECT_THAT(wt103.output, HasSubstr("prepare it with scripts/getdata.sh wt103 (from the"));
}

} // namespace
} // namespace xl::test
