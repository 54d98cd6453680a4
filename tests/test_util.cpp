#include "test_util.h"

#include "xl/prep/prepare.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace xl::test {

CommandResult run_command(const std::string& command, const fs::path& cwd) {
  const std::string full = "cd '" + cwd.string() + "' && " + command + " 2>&1";
  CommandResult result;
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::map<int64_t, double> train_losses(const fs::path& run) {
  return split_losses(run, "train");
}

std::map<int64_t, double> split_losses(const fs::path& run, const std::string& split) {
  std::map<int64_t, double> losses;
  std::string text = read_text(run / "metrics.jsonl");
  // A line still being written (or torn by a kill) has no newline yet.
  const auto last_newline = text.rfind('\n');
  text.erase(last_newline == std::string::npos ? 0 : last_newline + 1);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("split", "") == split) {
      losses[record["step"]] = record["loss"];
    }
  }
  return losses;
}

fs::path prepare_digits_corpus(const fs::path& dir) {
  std::string text;
  for (int line = 0; line < 200; ++line) {
    text += "0 1 2 3 4 5 6 7 8 9\n";
  }
  prep::PrepOptions options;
  for (const char* split : {"train", "valid", "test"}) {
    options.splits[split] = write_file(dir / (std::string(split) + ".txt"), text);
  }
  options.out = dir / "data";
  prep::prepare_corpus(options);
  return options.out;
}

std::map<std::string, std::string> files_of(const fs::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file()) {
      files[entry.path().string()] = read_text(entry.path());
    }
  }
  return files;
}

std::string nsmc_documents(size_t first, size_t count, const std::string& separator) {
  std::istringstream in(read_text(testdata("nsmc/ratings_train.txt")));
  std::string line;
  std::string out;
  std::getline(in, line); // the header
  for (size_t i = 0; i < first + count && std::getline(in, line); ++i) {
    if (i >= first) {
      const size_t a = line.find('\t');
      const size_t b = line.rfind('\t');
      out += line.substr(a + 1, b - a - 1) + separator;
    }
  }
  return out;
}

std::vector<std::string> tiny_configs() {
  std::vector<std::string> found;
  for (const char* root : {"configs", "tests/families"}) {
    for (const auto& folder : fs::directory_iterator(fs::path(kSourceDir) / root)) {
      if (!folder.is_directory()) {
        continue;
      }
      for (const auto& file : fs::directory_iterator(folder.path())) {
        const std::string name = file.path().filename().string();
        if (name.rfind("tiny", 0) == 0 && file.path().extension() == ".yaml") {
          found.push_back(fs::relative(file.path(), kSourceDir).string());
        }
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string tiny_config_name(const std::string& relative) {
  const fs::path path(relative);
  return path.parent_path().filename().string() + "_" + path.stem().string();
}

models::ForwardArgs with_log_probs() {
  models::ForwardArgs args;
  args.log_probs = true;
  return args;
}

} // namespace xl::test
