// What every xl app shares: the config flags (--config, --set, --dump-config,
// --print-schema) and the top-level error handling (user errors: one clear
// line, exit status 2).
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xl/app/flag_checks.h"
#include "xl/config/schema.h"

namespace xl::app {

struct ConfigFlags {
  std::string path;
  std::vector<std::string> overrides;
  bool dump = false;
  /// build and run even when the memory estimate exceeds the available memory
  bool skip_memory_check = false;
};

/// "xl <git describe> (LibTorch <version>, <CUDA devices>)", printed by --version.
std::string version_line();

/// --version, and defaults shown in --help; add_config_flags calls it.
void add_common_flags(CLI::App& app);

/// Adds --config/-c, --set (repeatable), --dump-config, --print-schema and
/// --skip-memory-check to `app`.
void add_config_flags(CLI::App& app, ConfigFlags& flags);

/// add_config_flags() plus what the apps that read a trained run share: --run (required; its
/// config.yaml is the config unless --config names another) and --checkpoint (best, last,
/// another checkpoint of the run or a file).
void add_run_flags(
    CLI::App& app,
    ConfigFlags& flags,
    std::string& run_dir,
    std::string& checkpoint);

/// Loads the config the flags name. Handles --dump-config by printing to stdout; returns false when the app should then exit with status
/// 0.
bool load_config(const ConfigFlags& flags, config::Config& out);

/// Parses the command line. Returns -1 when the app should go on, otherwise the
/// exit status (0 after --help, 2 for a usage error, with CLI11's message
/// printed).
int parse_command_line(CLI::App& app, int argc, char** argv);

/// parse_command_line() then load_config(): returns the exit status when the
/// app should stop there (help, usage error, --dump-config, --print-schema),
/// nothing when it should go on.
std::optional<int> parse_and_load(
    CLI::App& app,
    int argc,
    char** argv,
    const ConfigFlags& flags,
    config::Config& out);

/// Prints a tool's result line on stdout, for scripts, and into the log unless stdout and stderr
/// are one place (a terminal, or one file or pipe): the line once wherever the user reads it.
void show_result(const std::string& line);

/// "-" for standard input, as Unix tools read it: "/dev/stdin"; any other path as it is.
std::string dash_for_stdin(const std::string& path);
/// "-" for standard output, where an output flag names a file: "/dev/stdout" (written into,
/// as a device is); any other path as it is.
std::string dash_for_stdout(const std::string& path);

/// Makes glibc keep freed memory for reuse instead of returning it to the OS
/// after every large tensor (run_main calls it).
void tune_allocator();

/// Records how this program was invoked (its argv[0]), for app_command (run_main calls it).
void remember_invocation(const char* argv0);

/// How the user runs the app `name` ("xl-eval") from where they ran this one, for the commands a
/// tool prints to run next: beside this program as it was invoked ("build/bin/xl-eval" for
/// "build/bin/xl-train"), or the bare name when it was found on the PATH.
std::string app_command(const std::string& name);

/// The path of command `name` beside this one as it was invoked (the launcher in bin/, which
/// bounds the threads' spinning), or its bare name where this one was found on the PATH:
/// app_command unquoted, to run.
std::string app_path(const std::string& name);

/// `argument` as the shell reads it back: as it is when it holds only safe characters, else in
/// single quotes.
std::string shell_quote(const std::string& argument);

/// Runs `body` and maps failures onto exit codes: CLI parse errors as CLI11
/// does, UserError (and ConfigError) to one "error: ..." line and status 2,
/// anything else to "internal error" and 1. First remembers argv[0] and tunes the allocator
/// (the threads' spinning was bounded by the app's launcher: apps/launcher.cpp).
int run_main(char** argv, const std::function<int()>& body);

} // namespace xl::app
