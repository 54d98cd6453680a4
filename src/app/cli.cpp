#include "xl/app/cli.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string_view>

#include "xl/config/config.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/cpu_cache.h"
#include "xl/runtime/device.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"
#include "xl/util/utf8.h"
#include "xl/util/version.h"

namespace xl::app {

void add_common_flags(CLI::App& app) {
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", version_line());
}

std::string version_line() {
  return fmt::format(
      "xl {} ({}; LibTorch {}, {})",
      project_version(),
      version(),
      TORCH_VERSION,
      torch::cuda::is_available() ? fmt::format("{} CUDA device(s)", torch::cuda::device_count())
                                  : std::string("no CUDA device"));
}

void add_config_flags(CLI::App& app, ConfigFlags& flags) {
  add_common_flags(app);
  app.add_option("-c,--config", flags.path, "YAML config file (may name a `base:` to inherit)");
  app.add_option(
         "--set",
         flags.overrides,
         "override keys, e.g. --set model.d_model=512 train.lr=1e-4 (repeatable; a later "
         "value of the same key wins)")
      ->expected(1, CLI::detail::expected_max_vector_size)
      ->take_all();
  app.add_flag("--dump-config", flags.dump, "print the fully resolved config as YAML and exit");
  // Runs during parsing, before required options are checked: `xl-eval --print-schema` needs
  // no --run.
  app.add_flag_callback(
      "--print-schema",
      [] {
        std::cout << config::schema_reference();
        throw CLI::Success();
      },
      "print every config key with its type, default and meaning, and exit");
  app.add_flag(
      "--skip-memory-check",
      flags.skip_memory_check,
      "build the model even when its memory estimate exceeds the available memory");
}

void add_run_flags(
    CLI::App& app,
    ConfigFlags& flags,
    std::string& run_dir,
    std::string& checkpoint) {
  add_config_flags(app, flags);
  app.add_option(
         "--run",
         run_dir,
         "run directory; its config.yaml is the base config (--config replaces it)")
      ->required();
  app.add_option(
      "--checkpoint",
      checkpoint,
      "best, last, another checkpoint of the run (step_300, averaged: see xl-average) or a "
      "checkpoint file");
  app.final_callback([&] {
    run::require_run_folder("--run", run_dir);
    if (flags.path.empty()) {
      flags.path = run_dir + "/config.yaml";
    }
  });
}

bool load_config(const ConfigFlags& flags, config::Config& out) {
  if (flags.path.empty()) {
    throw UserError("no config given: pass --config FILE (see configs/)");
  }
  out = config::load(flags.path, flags.overrides);
  if (flags.dump) {
    std::cout << config::dump(out);
    return false;
  }
  return true;
}

namespace {

// Names and paths end up in config.yaml, the metrics and the logs, UTF-8 documents: a value
// that is not UTF-8 is refused before anything is created. A prompt is text for the model.
void require_utf8_values(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_name() == "--prompt") {
      continue;
    }
    for (const std::string& value : option->results()) {
      require_utf8(value, option->get_name());
    }
  }
}

// The first flag of argv the app does not know, and the one it is closest to: CLI11 reports
// what it checks first (`--run is required` for `--rnu`), not the typo. "" when all are known.
std::string unknown_flag(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> known;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) {
      known.push_back(name);
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      break;
    }
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      continue;
    }
    const std::string name(arg.substr(
        2, arg.find('=') == std::string_view::npos ? std::string_view::npos : arg.find('=') - 2));
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      const std::string guess = config::closest_key(name, known);
      return fmt::format(
          "unknown flag --{}{}", name, guess.empty() ? "" : ": did you mean --" + guess + "?");
    }
  }
  return "";
}

} // namespace

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) { // --help, --version
      return app.exit(e);
    }
    // One line, as every other user error; a mistyped flag named first.
    const std::string typo = unknown_flag(app, argc, argv);
    std::cerr << "error: " << (typo.empty() ? std::string(e.what()) : typo) << " (see --help)"
              << std::endl;
    return kUserErrorExit;
  }
  require_utf8_values(app);
  return -1;
}

std::optional<int> parse_and_load(
    CLI::App& app,
    int argc,
    char** argv,
    const ConfigFlags& flags,
    config::Config& out) {
  if (const int status = parse_command_line(app, argc, argv); status >= 0) {
    return status;
  }
  if (!load_config(flags, out)) {
    return 0;
  }
  return std::nullopt;
}

void show_result(const std::string& line) {
  struct stat out {};
  struct stat err {};
  const bool one_place = ::fstat(STDOUT_FILENO, &out) == 0 && ::fstat(STDERR_FILENO, &err) == 0 &&
      out.st_dev == err.st_dev && out.st_ino == err.st_ino;
  if (!one_place) {
    logger().info("{}", line);
  }
  std::cout << line << std::endl;
}

std::string dash_for_stdin(const std::string& path) {
  return path == "-" ? "/dev/stdin" : path;
}

std::string dash_for_stdout(const std::string& path) {
  return path == "-" ? "/dev/stdout" : path;
}

void tune_allocator() {
  // XL_ALLOCATOR=malloc leaves whatever malloc the process has (glibc's, or one put in
  // front of it with LD_PRELOAD) untouched, so allocators compare against the cache below.
  if (const char* choice = std::getenv("XL_ALLOCATOR"); choice != nullptr) {
    if (std::string_view(choice) == "malloc") {
      return;
    }
    std::cerr << "warning: XL_ALLOCATOR=" << choice
              << " is not a choice (only 'malloc'); xl's cache stays on" << std::endl;
  }
  // LibTorch's CPU allocator takes tensors straight from glibc malloc, which by
  // default maps and unmaps every large block and hands freed heap back to the
  // OS, so each training step page-faults its temporaries in again. Keeping
  // freed memory in the heap, and blocks above glibc's largest mmap threshold
  // in xl's cache, makes CPU steps faster (docs/benchmarks.md); the cost is a
  // higher resident set.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(runtime::kCpuCacheMinBlock));
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  runtime::install_cpu_cache();
}

namespace {

std::string& invocation() {
  static std::string argv0;
  return argv0;
}

} // namespace

void remember_invocation(const char* argv0) {
  invocation() = argv0 != nullptr ? argv0 : "";
}

std::string app_path(const std::string& name) {
  const std::string& argv0 = invocation();
  const size_t slash = argv0.rfind('/');
  // Found on the PATH, as the sibling will be.
  return slash == std::string::npos ? name : argv0.substr(0, slash + 1) + name;
}

std::string app_command(const std::string& name) {
  return shell_quote(app_path(name));
}

std::string shell_quote(const std::string& argument) {
  const bool safe = !argument.empty() &&
      argument.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
          "_-./=:,+@%") == std::string::npos;
  if (safe) {
    return argument;
  }
  std::string quoted = "'";
  for (const char c : argument) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return quoted + "'";
}

namespace {

// A tool whose results went to a full disk or a closed standard output did not deliver them:
// an error, never a silent exit 0.
int checked_output(int status) {
  std::cout.flush();
  const bool lost = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!lost) {
    return status;
  }
  std::cerr << "error: the standard output could not be written (closed, or its disk full): "
               "the results are incomplete"
            << std::endl;
  return status == 0 ? kUserErrorExit : status;
}

} // namespace

int run_main(char** argv, const std::function<int()>& body) {
  remember_invocation(argv[0]);
  tune_allocator();
  // Past a file-size limit a write fails with EFBIG, which the writers report, instead of
  // killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // A scheduler's warning ahead of a time limit (SIGUSR1) ends no tool; xl-train checkpoints.
  std::signal(SIGUSR1, SIG_IGN);
  // A reader or a peer rank that went away makes a write fail (EPIPE), which the writer reports
  // in one line, instead of ending the process without a word.
  std::signal(SIGPIPE, SIG_IGN);
  runtime::route_torch_warnings();
  try {
    return checked_output(body());
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return kUserErrorExit;
  } catch (const std::filesystem::filesystem_error& e) {
    if (const auto said = file_system_refusal(e); !said.empty()) {
      std::cerr << "error: " << said << std::endl;
      return kUserErrorExit;
    }
    std::cerr << "internal error: " << e.what() << std::endl;
    return 1;
  } catch (const c10::OutOfMemoryError& e) {
    std::cerr << "error: " << runtime::out_of_memory(e) << std::endl;
    return kUserErrorExit;
  } catch (const c10::Error& e) {
    std::cerr << "internal error: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << std::endl;
    return 1;
  }
}

} // namespace xl::app
