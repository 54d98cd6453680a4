#include "fuzz_util.h"

#include <unistd.h>

#include <fstream>

namespace xl::fuzz {

const fs::path& work_dir() {
  static const fs::path dir = [] {
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("xl-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    // Removed when the process ends normally; a crash leaves it for inspection.
    std::atexit([] { fs::remove_all(work_dir()); });
    return d;
  }();
  return dir;
}

fs::path input_file(const uint8_t* data, size_t size, const std::string& name) {
  const fs::path path = work_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

std::string sample_text(size_t max_bytes) {
  if (const char* path = std::getenv("XL_FUZZ_TEXT")) {
    std::ifstream in(path, std::ios::binary);
    std::string text(max_bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(max_bytes));
    text.resize(static_cast<size_t>(in.gcount()));
    if (!text.empty()) {
      return text;
    }
  }
  return " = Robert Boulter = \n\n Robert Boulter is an English film , television and theatre "
         "actor . He had a guest @-@ starring role on the television series The Bill in 2000 "
         ".\n\n = = Career = = \n\n In 2006 , Boulter starred alongside Whishaw in the play "
         "Citizenship written by Mark Ravenhill .\n";
}

std::optional<fs::path> seeds_dir() {
  const char* dir = std::getenv("XL_FUZZ_SEEDS");
  if (dir == nullptr) {
    return std::nullopt;
  }
  fs::create_directories(dir);
  return fs::path(dir);
}

void write_seed(const fs::path& dir, const std::string& name, const std::string& content) {
  std::ofstream(dir / name, std::ios::binary) << content;
}

void require(bool condition, const std::string& what) {
  if (!condition) {
    std::fprintf(stderr, "finding: %s\n", what.c_str());
    std::abort();
  }
}

} // namespace xl::fuzz
