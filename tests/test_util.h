// Helpers shared by the tests: temporary folders, files and running the apps.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"
#include "xl/models/language_model.h"
#include "xl/util/error.h"

namespace xl::test {

namespace fs = std::filesystem;

/// A fresh folder under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() : TempDir(test_prefix()) {}
  /// `prefix` and this process's id: a leftover of an earlier process with the same id (ids are
  /// reused) is removed first.
  explicit TempDir(const std::string& prefix)
      : path_(fs::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const {
    return path_;
  }
  fs::path operator/(const std::string& name) const {
    return path_ / name;
  }

 private:
  static std::string test_prefix() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "xl-test-";
    if (info != nullptr) {
      name += std::string(info->test_suite_name()) + "-" + info->name() + "-";
    }
    return name;
  }

  fs::path path_;
};

inline fs::path write_file(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline fs::path testdata(const std::string& relative) {
  return fs::path(kTestData) / relative;
}

struct CommandResult {
  int status = -1;
  std::string output; // stdout and stderr together
};

/// Runs a shell command in `cwd`, capturing its output and exit status.
CommandResult run_command(const std::string& command, const fs::path& cwd = fs::current_path());

/// step -> training loss of a run directory's metrics.jsonl, from the last record of each step
/// (a killed run may have logged steps that its resumed continuation logs again).
std::map<int64_t, double> train_losses(const fs::path& run);

/// The same for the records of `split` ("valid": the validations during training).
std::map<int64_t, double> split_losses(const fs::path& run, const std::string& split);

/// Every file below `folder` (a run directory) and its bytes: what a reader must leave as it was.
std::map<std::string, std::string> files_of(const fs::path& folder);

/// A word corpus prepared by xl-prep in `dir`/data (returned): the line "0 1 2 3 4 5 6 7 8 9"
/// 200 times in each of the train, valid and test splits, where every token predicts the next.
fs::path prepare_digits_corpus(const fs::path& dir);

/// The review texts of NSMC's training rows [first, first + count) (bundled test data), each
/// followed by `separator`.
std::string nsmc_documents(size_t first, size_t count, const std::string& separator = "\n");

/// The smallest config of every model family, and of its variants: configs/*/tiny*.yaml of the
/// source tree, then the test families' tests/families/*/tiny*.yaml, as paths relative to it,
/// sorted. The tests that go over every family take them from here, so a new family's
/// configs/<family>/tiny.yaml is all they need (Registry.EveryFamilyHasATinyConfig checks that
/// each family has one); they call register_test_families() (families/test_families.h) before
/// loading them.
std::vector<std::string> tiny_configs();

/// A tiny config's test name: its folder and file ("configs/xlnet/tiny_cls.yaml":
/// xlnet_tiny_cls).
std::string tiny_config_name(const std::string& relative);

/// The message of the xl::UserError that `f` throws (a test failure when it throws none).
template <typename F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

/// Moves `from`'s state into `to` (a batch source, a schedule: anything with save and load)
/// through the bytes a checkpoint holds for it.
template <class From, class To>
void transfer(const From& from, To& to) {
  torch::serialize::OutputArchive out;
  from.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in_bytes(bytes.str());
  torch::serialize::InputArchive in;
  in.load_from(in_bytes);
  to.load(in);
}

/// Forward arguments that ask for the log-probabilities.
models::ForwardArgs with_log_probs();

} // namespace xl::test
