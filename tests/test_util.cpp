#include "test_util.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

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

} // namespace xl::test
