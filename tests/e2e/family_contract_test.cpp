// The contract every model family keeps, checked through the apps from each family's tiny config
// (configs/<family>/tiny*.yaml, and the test families' tests/families/<family>/tiny.yaml;
// Registry.EveryFamilyHasATinyConfig holds every registered family to having one), so through the
// test builds of the apps (test-bin/), which have the test families too: training killed with SIGKILL resumes to the uninterrupted losses; a trained run
// evaluates, samples (the same text for the same seed, whether its memory or decoding cache
// carries the context or it is re-read), averages its snapshots and goes to
// Hugging Face's format and back with the same loss; xl-bench measures it. A capability the
// family lacks is refused with the reason its descriptor gives. The library half of the
// contract (bf16, activation checkpointing, lr_layer_decay, no host reads in a step, the memory
// estimate, evaluation without memory) is models/family_contract_test.cpp, over the same
// configs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fmt/format.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "e2e_util.h"
#include "families/test_families.h"
#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/models/registry.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

// An app of test-bin/: the app with the test families registered.
std::string family_app(const std::string& name) {
  return std::string(kTestBinDir) + "/" + name;
}

// A family's tiny config, its descriptor and its prepared data.
struct Family {
  std::string config; // relative to the source tree
  const models::ModelFamily* family = nullptr;
  fs::path data;
  /// a classifier's labelled texts, not a language model's text
  bool labelled = false;

  explicit Family(std::string relative) : config(std::move(relative)) {
    register_test_families();
    auto resolved = config::load(config_file(config));
    family = &models::model_family(resolved);
    data = prepared_data_for(resolved.data.dir);
    resolved.data.dir = data.string();
    labelled = models::open_dataset(resolved)->labelled();
  }

  // xl-train on the config and its data, writing `run`, checkpointing every 4 steps.
  std::string train(const fs::path& run, const std::string& extra) const {
    return family_app("xl-train") + " --config " + config_file(config) +
        " --set data.dir=" + data.string() + " run.dir=" + run.string() +
        " train.eval_interval=4 train.max_eval_steps=2 train.log_interval=1 " + extra;
  }
};

// A user's own text for a family's data, in none of its splits: WikiText-2's training lines
// (the test corpus trains on its valid split), enwik8 past the prepared prefix, NSMC reviews past
// those prepared; `lines` of it.
std::string users_text(const fs::path& data, size_t lines) {
  std::string text;
  if (data == nsmc_dir()) {
    return nsmc_documents(5000, lines);
  }
  std::istringstream in(read_text(
      data == enwik8_dir() ? testdata("enwik8/enwik8-prefix-1M")
                           : testdata("wikitext-2/wiki.train.tokens")));
  in.seekg(data == enwik8_dir() ? 600000 : 0);
  std::string line;
  std::getline(in, line); // a part of a line, for enwik8
  for (size_t i = 0; i < lines && std::getline(in, line);) {
    if (!line.empty()) {
      text += line + "\n";
      ++i;
    }
  }
  return text;
}

// The loss xl-eval reports for a split ("test | loss 5.1234 | ...").
double reported_loss(const std::string& output) {
  const auto at = output.find(" | loss ");
  EXPECT_NE(at, std::string::npos) << output;
  return at == std::string::npos ? 0.0 : std::stod(output.substr(at + 8));
}

class FamilyContract : public ::testing::TestWithParam<std::string> {};

// SIGKILL between checkpoints loses only the steps after the last one, and the resumed run's
// losses are the uninterrupted run's, bit for bit. Both runs have a step budget they never reach
// (schedules such as the character transformer's auxiliary losses depend on it) and stop at the
// same step, at least 4 after the checkpoint the kill left (on a loaded machine the kill may
// land several steps after the one it waited for).
TEST_P(FamilyContract, KilledTrainingResumesToTheUninterruptedLosses) {
  const Family f(GetParam());
  TempDir dir;
  const std::string endless = "--set train.max_step=1000000 ";
  const pid_t pid = spawn(f.train(dir / "cut", endless), dir.path());
  const int status = signal_after_step(pid, dir / "cut", 9, SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(status));
  const int64_t saved = checkpoint_step(dir / "cut");
  EXPECT_GE(saved, 4);
  EXPECT_EQ(saved % 4, 0); // only the periodic checkpoints were written
  const int64_t stop = std::max<int64_t>(12, saved + 4);
  const std::string until = "--stop-at-step " + std::to_string(stop);
  const auto reference = run_command(f.train(dir / "ref", endless + until), dir.path());
  ASSERT_EQ(reference.status, 0) << reference.output;
  const auto resumed = run_command(f.train(dir / "cut", endless + until + " --resume"), dir.path());
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  expect_same_losses_after(train_losses(dir / "ref"), train_losses(dir / "cut"), saved, stop);
}

// A trained run, through every tool that reads one.
TEST_P(FamilyContract, ATrainedRunEvaluatesSamplesAveragesAndExports) {
  const Family f(GetParam());
  TempDir dir;
  const auto trained =
      run_command(f.train(dir / "r", "--set train.max_step=8 train.keep_snapshots=2"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const std::string run = " --run " + (dir / "r").string();
  const auto evaluated = run_command(family_app("xl-eval") + run + " --max-steps 2", dir.path());
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  const double loss = reported_loss(evaluated.output);

  // Sampling: the same seed draws the same text, through the memory or the decoding cache as
  // by re-reading the context (6 tokens after the prompt fit every tiny config's memory and
  // window), or the descriptor's reason to refuse.
  const auto sample = [&](const std::string& flags) { // the text on stdout, the log in a file
    return run_command(
        "{ " + family_app("xl-sample") + run + " --tokens 6 " + flags + " 2>sample.log; }",
        dir.path());
  };
  const auto drawn = sample("--seed 3");
  if (f.family->no_sampling.empty()) {
    ASSERT_EQ(drawn.status, 0) << read_text(dir / "sample.log");
    EXPECT_FALSE(drawn.output.empty());
    EXPECT_EQ(sample("--seed 3").output, drawn.output);
    EXPECT_EQ(sample("--seed 3 --no-memory").output, drawn.output);
    EXPECT_THAT(read_text(dir / "sample.log"), HasSubstr("re-reading up to"));
  } else {
    EXPECT_EQ(drawn.status, 2) << drawn.output;
    EXPECT_THAT(read_text(dir / "sample.log"), HasSubstr(f.family->no_sampling));
  }

  // The two snapshots, averaged, evaluate.
  const auto averaged = run_command(family_app("xl-average") + run + " --last 2", dir.path());
  ASSERT_EQ(averaged.status, 0) << averaged.output;
  EXPECT_THAT(averaged.output, HasSubstr("averaged 2 checkpoints (step_4.pt, step_8.pt)"));
  const auto average_evaluated =
      run_command(family_app("xl-eval") + run + " --checkpoint averaged --max-steps 2", dir.path());
  EXPECT_EQ(average_evaluated.status, 0) << average_evaluated.output;

  // Hugging Face's format and back: the imported run scores what the trained one did.
  const auto exported = run_command(family_app("xl-export") + run + " --out hf", dir.path());
  if (f.family->hf_config == nullptr) {
    EXPECT_EQ(exported.status, 2) << exported.output;
    EXPECT_THAT(exported.output, HasSubstr(f.family->no_hf_model));
    EXPECT_FALSE(fs::exists(dir / "hf"));
    return;
  }
  ASSERT_EQ(exported.status, 0) << exported.output;
  const auto imported = run_command(
      family_app("xl-import") + " --config " + (dir / "r/config.yaml").string() +
          " --set run.dir=back --weights hf/model.safetensors",
      dir.path());
  ASSERT_EQ(imported.status, 0) << imported.output;
  const auto back = run_command(family_app("xl-eval") + " --run back --max-steps 2", dir.path());
  ASSERT_EQ(back.status, 0) << back.output;
  EXPECT_NEAR(reported_loss(back.output), loss, 1e-4) << back.output;
}

// A user's own text, in no split, long or shorter than one segment: scored with the run's
// vocabulary, with the score of each token listed (their mean is the loss) and the result in a
// JSON file of the user's, the run's own files left as they were. A classifier predicts the
// class of each example instead (probabilities that sum to 1, the accuracy xl-eval finds), and
// --per-token names the command that fits.
TEST_P(FamilyContract, ScoresAUsersTextOrPredictsTheClassOfEachExample) {
  const Family f(GetParam());
  TempDir dir;
  const auto trained = run_command(f.train(dir / "r", "--set train.max_step=8"), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const auto before = files_of(dir / "r");
  const std::string run = " --run " + (dir / "r").string();
  if (f.labelled) {
    const auto examples = (f.data / "test.tsv").string();
    const auto predicted = run_command(
        family_app("xl-predict") + run + " --file " + examples + " --out p.tsv", dir.path());
    ASSERT_EQ(predicted.status, 0) << predicted.output;
    std::istringstream rows(read_text(dir / "p.tsv"));
    std::string row;
    std::getline(rows, row);
    EXPECT_EQ(row, "line\tpredicted\tprob_0\tprob_1\tgold\ttext");
    int64_t count = 0;
    int64_t right = 0;
    while (std::getline(rows, row)) {
      std::istringstream fields(row);
      int64_t line = 0;
      int64_t label = 0;
      int64_t gold = 0;
      double p0 = 0.0;
      double p1 = 0.0;
      fields >> line >> label >> p0 >> p1 >> gold;
      EXPECT_EQ(line, ++count);
      EXPECT_NEAR(p0 + p1, 1.0, 2e-6) << row;
      EXPECT_EQ(label, p1 > p0 ? 1 : 0) << row;
      right += label == gold ? 1 : 0;
    }
    EXPECT_EQ(count, 500);
    // For people: the classes' names, one JSON object an example with its text, read from
    // standard input; names that do not fit the classes refused before a row is written.
    const auto named = run_command(
        family_app("xl-predict") + run + " --file - --labels neg,pos --json < " + examples,
        dir.path());
    ASSERT_EQ(named.status, 0) << named.output;
    std::istringstream lines(named.output);
    std::string first;
    while (std::getline(lines, first) && first.rfind("{\"line\":1,", 0) != 0) {
    }
    const auto object = nlohmann::json::parse(first);
    std::istringstream tsv(read_text(dir / "p.tsv"));
    std::getline(tsv, row);
    std::getline(tsv, row);
    EXPECT_EQ(object["text"], row.substr(row.rfind('\t') + 1));
    EXPECT_EQ(object["label"], object["predicted"] == 1 ? "pos" : "neg");
    EXPECT_TRUE(object["gold"] == "neg" || object["gold"] == "pos") << first;
    EXPECT_NEAR(
        object["probs"]["neg"].get<double>() + object["probs"]["pos"].get<double>(), 1.0, 1e-9);
    const auto three = run_command(
        family_app("xl-predict") + run + " --file " + examples + " --labels a,b,c", dir.path());
    EXPECT_EQ(three.status, 2);
    EXPECT_THAT(three.output, HasSubstr("--labels names 3 classes and the classifier has 2"));
    const auto evaluated =
        run_command(family_app("xl-eval") + run + " --file " + examples, dir.path());
    ASSERT_EQ(evaluated.status, 0) << evaluated.output;
    EXPECT_THAT(
        evaluated.output,
        HasSubstr(fmt::format("acc/cls {:.4f} | 500 examples", static_cast<double>(right) / 500)));
    const auto refused = run_command(
        family_app("xl-eval") + run + " --file " + examples + " --per-token t.tsv", dir.path());
    EXPECT_EQ(refused.status, 2);
    EXPECT_THAT(refused.output, HasSubstr("is a classifier: its predictions"));
    EXPECT_THAT(refused.output, HasSubstr("xl-predict --run"));
    // Blank lines hold no example: left out, the others keep their line numbers; labels that
    // are no class numbers read as text, with a warning.
    write_file(dir / "blank.txt", "좋은 영화\n\n  \npositive\t별로\n");
    const auto blank =
        run_command(family_app("xl-predict") + run + " --file blank.txt --out b.tsv", dir.path());
    ASSERT_EQ(blank.status, 0) << blank.output;
    EXPECT_THAT(blank.output, HasSubstr("2 blank lines left out"));
    const auto rows_b = read_text(dir / "b.tsv");
    EXPECT_THAT(rows_b, HasSubstr("\n1\t"));
    EXPECT_THAT(rows_b, HasSubstr("\n4\t"));
    // A label without a text: left out as a blank line is.
    write_file(dir / "textless.tsv", "1\t좋은 영화\n0\t\n1\t \n");
    const auto textless =
        run_command(family_app("xl-predict") + run + " --file textless.tsv", dir.path());
    ASSERT_EQ(textless.status, 0) << textless.output;
    EXPECT_THAT(textless.output, HasSubstr("2 lines of a label without text left out"));
    write_file(dir / "plus.tsv", "+1\t좋은 영화\n-1\t별로\n");
    const auto plus = run_command(family_app("xl-predict") + run + " --file plus.tsv", dir.path());
    ASSERT_EQ(plus.status, 0) << plus.output;
    EXPECT_THAT(plus.output, HasSubstr("'+1' before a tab is no class number"));
    write_file(dir / "empty_lines.txt", "\n\n\n");
    EXPECT_EQ(
        run_command(family_app("xl-predict") + run + " --file empty_lines.txt", dir.path()).status,
        2);
  } else {
    write_file(dir / "long.txt", users_text(f.data, 60));
    // Shorter than a segment or a window: two reviews, or a few words.
    std::string few = users_text(f.data, 2);
    if (f.data != nsmc_dir()) {
      few = few.substr(0, few.rfind(' ', 24));
    }
    write_file(dir / "short.txt", few);
    for (const std::string text : {"long", "short"}) {
      SCOPED_TRACE(text);
      const auto scored = run_command(
          family_app("xl-eval") + run + " --file " + text + ".txt --streams 3 --per-token " + text +
              ".tsv --json " + text + ".json",
          dir.path());
      ASSERT_EQ(scored.status, 0) << scored.output;
      const auto result = nlohmann::json::parse(read_text(dir / (text + ".json")));
      EXPECT_EQ(result["file"], text + ".txt");
      EXPECT_EQ(result.contains("read") && result["read"].contains("fitted"), text == "short")
          << result.dump();
      std::istringstream rows(read_text(dir / (text + ".tsv")));
      std::string row;
      std::getline(rows, row);
      // A word or byte vocabulary says where each token stands; XLNet's pieces do not.
      const bool origins = f.data != nsmc_dir();
      EXPECT_EQ(row, origins ? "index\ttoken\tlog_prob\toffset\ttext" : "index\ttoken\tlog_prob");
      const std::string written = read_text(dir / (text + ".txt"));
      double sum = 0.0;
      int64_t scored_rows = 0;
      while (std::getline(rows, row)) {
        const auto fields = tab_fields(row);
        if (fields.size() > 2 && !fields[2].empty()) {
          sum -= std::stod(fields[2]);
          ++scored_rows;
        }
        if (origins && fields.size() == 5 && fields[4].find('\\') == std::string::npos) {
          EXPECT_EQ(written.substr(std::stoul(fields[3]), fields[4].size()), fields[4]) << row;
        }
      }
      EXPECT_EQ(scored_rows, result["tokens"].get<int64_t>());
      EXPECT_NEAR(sum / scored_rows, result["loss"].get<double>(), 1e-4);
    }
  }
  EXPECT_EQ(files_of(dir / "r"), before); // not a byte of the run changed
}

// A run stands alone: it keeps its tokenizer beside its config.yaml, and scores, samples,
// predicts and exports with its data folder deleted, as before. A run made before runs kept
// theirs names the way out, and xl-train --add-tokenizer gives it its data's.
TEST_P(FamilyContract, ARunStandsWithoutItsDataFolder) {
  const Family f(GetParam());
  TempDir dir;
  fs::copy(f.data, dir / "data", fs::copy_options::recursive);
  const auto trained = run_command(
      f.train(dir / "r", "--set train.max_step=8 data.dir=" + (dir / "data").string()), dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  EXPECT_TRUE(fs::exists(dir / "r/vocab.txt") || fs::exists(dir / "r/spiece.model"));
  const std::string run = " --run r";
  write_file(dir / "mine.txt", f.labelled ? nsmc_documents(5000, 6) : users_text(f.data, 6));
  // What each command gives, with the data or without.
  const auto outputs = [&](const std::string& tag) {
    std::vector<std::string> out;
    if (f.labelled) {
      const auto p = run_command(
          family_app("xl-predict") + run + " --file mine.txt --out p_" + tag + ".tsv", dir.path());
      EXPECT_EQ(p.status, 0) << p.output;
      out.push_back(read_text(dir / ("p_" + tag + ".tsv")));
    } else {
      const auto e = run_command(
          family_app("xl-eval") + run + " --file mine.txt --per-token t_" + tag + ".tsv",
          dir.path());
      EXPECT_EQ(e.status, 0) << e.output;
      out.push_back(read_text(dir / ("t_" + tag + ".tsv")));
    }
    if (f.family->no_sampling.empty()) {
      const auto s = run_command(
          "(" + family_app("xl-sample") + run + " --tokens 12 --seed 5 2>/dev/null)", dir.path());
      EXPECT_EQ(s.status, 0) << s.output;
      out.push_back(s.output);
    }
    return out;
  };
  const auto with_data = outputs("with");
  fs::remove_all(dir / "data");
  EXPECT_EQ(outputs("without"), with_data);
  if (f.family->no_hf_model.empty()) {
    const auto exported = run_command(family_app("xl-export") + run + " --out hf", dir.path());
    EXPECT_EQ(exported.status, 0) << exported.output;
  }

  // A run of before: no tokenizer of its own.
  const fs::path kept =
      fs::exists(dir / "r/vocab.txt") ? dir / "r/vocab.txt" : dir / "r/spiece.model";
  fs::remove(kept);
  const auto refused = run_command(family_app("xl-eval") + run + " --file mine.txt", dir.path());
  EXPECT_EQ(refused.status, 2);
  EXPECT_THAT(refused.output, HasSubstr("holds no tokenizer"));
  EXPECT_THAT(refused.output, HasSubstr("docs/runs.md"));
  fs::copy(f.data, dir / "data", fs::copy_options::recursive);
  const auto added =
      run_command(family_app("xl-train") + " --config r/config.yaml --add-tokenizer", dir.path());
  ASSERT_EQ(added.status, 0) << added.output;
  EXPECT_THAT(added.output, HasSubstr("added " + kept.lexically_relative(dir.path()).string()));
  fs::remove_all(dir / "data");
  EXPECT_EQ(outputs("added"), with_data);
}

// xl-bench needs no prepared data: every family runs on random data of its shapes, and each
// default mode is measured or skipped with the reason.
TEST_P(FamilyContract, BenchmarksOnRandomData) {
  TempDir dir;
  const auto r = run_command(
      family_app("xl-bench") + " --config " + config_file(GetParam()) +
          " --n-token 3000 --warmup 1 --steps 2 --json bench.json",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  std::set<std::string> measured;
  const auto json = nlohmann::json::parse(read_text(dir / "bench.json"));
  for (const auto& record : json["results"]) {
    measured.insert(record["mode"].get<std::string>());
    EXPECT_GT(record["tokens_per_s"].get<double>(), 0.0) << record.dump();
    EXPECT_GE(record["input_tokens_per_s"].get<double>(), record["tokens_per_s"].get<double>())
        << record.dump();
  }
  EXPECT_EQ(measured.count("train"), 1U) << r.output;
  for (const std::string mode : {"eval", "vanilla"}) {
    EXPECT_NE(measured.count(mode) == 1, r.output.find(mode + ": skipped, ") != std::string::npos)
        << mode << ": " << r.output;
  }
}

// Each tiny config, named by its folder and file (test::tiny_config_name).
INSTANTIATE_TEST_SUITE_P(
    EveryFamily,
    FamilyContract,
    ::testing::ValuesIn(tiny_configs()),
    [](const ::testing::TestParamInfo<std::string>& param) {
      return tiny_config_name(param.param);
    });

} // namespace
} // namespace xl::test
