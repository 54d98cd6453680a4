#include "e2e_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "xl/prep/prepare.h"
#include "xl/run/checkpoint.h"

namespace xl::test {

std::vector<std::string> tab_fields(const std::string& row) {
  std::vector<std::string> fields;
  std::istringstream cells(row);
  for (std::string cell; std::getline(cells, cell, '\t');) {
    fields.push_back(cell);
  }
  return fields;
}

const fs::path& corpus_dir() {
  // Shared by the program's tests, removed when it ends.
  static const TempDir folder("xl-e2e-corpus-");
  static const fs::path dir = [] {
    const fs::path& d = folder.path();
    prep::PrepOptions options;
    options.splits["train"] = testdata("wikitext-2/wiki.valid.tokens");
    options.splits["valid"] = testdata("wikitext-2/wiki.test.tokens");
    options.splits["test"] = testdata("wikitext-2/wiki.test.tokens");
    options.out = d;
    prep::prepare_corpus(options);
    return d;
  }();
  return dir;
}

namespace {

// The first `rows` data rows of an NSMC file, header kept.
fs::path nsmc_slice(const std::string& split, size_t rows, const fs::path& out) {
  std::istringstream in(read_text(testdata("nsmc/ratings_" + split + ".txt")));
  std::string text;
  std::string line;
  for (size_t i = 0; i <= rows && std::getline(in, line); ++i) {
    text += line + "\n";
  }
  return write_file(out, text);
}

} // namespace

const fs::path& nsmc_dir() {
  static const TempDir folder("xl-e2e-nsmc-");
  static const fs::path dir = [] {
    const fs::path& d = folder.path();
    const auto train = nsmc_slice("train", 3000, d / "src/train.tsv");
    const auto test = nsmc_slice("test", 500, d / "src/test.tsv");
    auto r = run_command(
        app("xl-prep") + " --format nsmc --train " + train.string() + " --test " + test.string() +
        " --holdout 300 --out " + d.string());
    EXPECT_EQ(r.status, 0) << r.output;
    r = run_command(
        app("xl-prep") + " --format pieces --vocab-size 2000 --character-coverage 0.995 --train " +
        (d / "train.txt").string() + " --valid " + (d / "valid.txt").string() + " --test " +
        (d / "test.txt").string() + " --out " + d.string());
    EXPECT_EQ(r.status, 0) << r.output;
    return d;
  }();
  return dir;
}

const fs::path& enwik8_dir() {
  static const TempDir folder("xl-e2e-enwik8-");
  static const fs::path dir = [] {
    const fs::path& d = folder.path();
    const auto text = read_text(testdata("enwik8/enwik8-prefix-1M"));
    write_file(d / "src/train.txt", text.substr(0, 200000));
    write_file(d / "src/test.txt", text.substr(200000, 20000));
    const auto r = run_command(
        app("xl-prep") +
            " --format byte --vocab-from all --train src/train.txt --valid src/test.txt "
            "--test src/test.txt --out .",
        d);
    EXPECT_EQ(r.status, 0) << r.output;
    return d;
  }();
  return dir;
}

fs::path prepared_data_for(const fs::path& data_dir) {
  const std::string name = data_dir.filename().string();
  if (name == "wikitext-2") {
    return corpus_dir();
  }
  if (name == "nsmc") {
    return nsmc_dir();
  }
  if (name == "enwik8-prefix") {
    return enwik8_dir();
  }
  ADD_FAILURE() << "no prepared test corpus stands for data.dir " << data_dir
                << ": add one to tests/e2e/e2e_util.cpp";
  return {};
}

void expect_same_losses_after(
    const std::map<int64_t, double>& reference,
    const std::map<int64_t, double>& resumed,
    int64_t from,
    int64_t to) {
  for (int64_t step = from + 1; step <= to; ++step) {
    ASSERT_TRUE(reference.count(step) && resumed.count(step)) << "step " << step;
    EXPECT_EQ(reference.at(step), resumed.at(step)) << "step " << step;
  }
}

std::string train_command(const fs::path& run, const std::string& extra) {
  return std::string(kBinDir) + "/xl-train --config " + kSourceDir +
      "/configs/transformer_xl/tiny.yaml --set data.dir=" + corpus_dir().string() +
      " --set run.dir=" + run.string() + " " + extra;
}

void train_ten_steps(const TempDir& dir) {
  const auto r = run_command(train_command(dir / "r", "--stop-at-step 10"), dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
}

int64_t checkpoint_step(const fs::path& run) {
  torch::serialize::InputArchive archive;
  return run::load_checkpoint(run / "checkpoints/last.pt", archive).step;
}

pid_t spawn(const std::string& command, const fs::path& cwd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::chdir(cwd.c_str()) != 0) {
      ::_exit(127);
    }
    const std::string quiet = "exec " + command + " >/dev/null 2>&1";
    ::execl("/bin/sh", "sh", "-c", quiet.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int signal_after_step(pid_t pid, const fs::path& run, int64_t step, int sig) {
  for (int i = 0; i < 6000; ++i) {
    std::error_code ec;
    if (fs::exists(run / "metrics.jsonl", ec)) {
      const auto losses = train_losses(run);
      if (!losses.empty() && losses.rbegin()->first >= step) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string app(const std::string& name) {
  return std::string(kBinDir) + "/" + name;
}

std::string config_file(const std::string& relative) {
  return std::string(kSourceDir) + "/" + relative;
}

} // namespace xl::test
