// The one rule for what a tool writes (docs/integrity.md, "Outputs"): never over a file a run
// owns, never outside the folder its flag names, never over an existing output unless told
// --force, and checked before any work is done.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xl/util/files.h"

namespace xl::run {

/// The run directory that `path` lies in or is (a folder holding config.yaml beside
/// checkpoints/, metrics.jsonl or .lock), found through symbolic links; `path` need not exist.
std::optional<std::filesystem::path> enclosing_run(const std::filesystem::path& path);

/// What `path` is to the run `run` that encloses it: "its config", "its metrics", "its log",
/// "its lock", "its TensorBoard events", "its checkpoints" (anything under checkpoints/), or
/// empty for a file the run does not own.
std::string file_role(const std::filesystem::path& run, const std::filesystem::path& path);

/// Refuses (UserError naming `flag`) a name given where a plain file name is asked: empty,
/// "." or "..", with a '/', a NUL or another control character, or longer than 255 bytes.
void check_plain_name(const std::string& flag, const std::string& name);

/// Whether `path` is written through rather than replaced: a character device (/dev/null, a
/// terminal), a pipe, or a descriptor's link (/dev/stdout, /proc/self/fd/1, /dev/fd/3, even where
/// the descriptor is a file the shell redirected). A tool writes into these as they are; it
/// never replaces them, nor the links that lead to them.
bool writes_through(const std::filesystem::path& path);

/// A descriptor to write `path` through (writes_through), after what stdio holds is flushed: a
/// copy of this process's own descriptor where `path` leads to one (/dev/stdout: the order of
/// what is written through it and through stdout is kept), else `path` opened to append. The
/// caller closes it; a failure is a UserError naming `flag`.
int open_through(const std::string& flag, const std::filesystem::path& path);

/// Checks the file a tool is about to write for `flag` before it starts work, and returns where
/// it goes: a path that writes_through() as it is (no --force needed), a link to a file as the
/// file it leads to (the link stays), else the path. Refuses an empty path, a folder, a disk,
/// a socket, a file a run owns or anything under a run's checkpoints/ (with --force too), an
/// existing file unless `force`, and a path whose existing part is not a writable folder.
/// Missing folders are created when the file is written (write_output).
std::filesystem::path check_output_file(
    const std::string& flag,
    const std::string& path,
    bool force);

/// The files a tool writes for several flags, each checked by check_output_file, no two of them
/// one file.
class OutputFiles {
 public:
  explicit OutputFiles(bool force) : force_(force) {}
  /// Checks `path` for `flag` (nothing when it is unset) and returns it; a file another flag
  /// named already is a UserError naming both.
  std::optional<std::filesystem::path> add(
      const std::string& flag,
      const std::optional<std::string>& path);
  /// Records a file the tool reads for `flag` (nothing when it is unset): an output naming it,
  /// before or after, is a UserError, with `force` too (it would be written over as it is read).
  void add_input(const std::string& flag, const std::optional<std::string>& path);

 private:
  bool force_;
  std::vector<std::pair<std::string, std::filesystem::path>> checked_;
  std::vector<std::pair<std::string, std::filesystem::path>> inputs_;
};

/// Checks the folder a tool is about to write several files into for `flag`, and returns it:
/// refuses an empty path, a file, a run directory or a folder inside one, a folder that is
/// not empty unless `force`, and a path whose existing part is not a writable folder.
std::filesystem::path check_output_folder(
    const std::string& flag,
    const std::string& path,
    bool force);

/// Creates `folder` and the folders above it, a UserError naming `flag` when it cannot.
void create_output_folder(const std::string& flag, const std::filesystem::path& folder);

/// Writes what `produce` streams to a path checked by check_output_file: a file replaced whole
/// and atomically, the folders above it created; a device, pipe or descriptor's link written
/// through, appended to. A failure is a UserError naming `flag`.
void write_output(
    const std::string& flag,
    const std::filesystem::path& path,
    const std::function<void(const ByteSink&)>& produce);

/// write_output of content held in memory.
void write_output_file(
    const std::string& flag,
    const std::filesystem::path& path,
    const std::string& content);

} // namespace xl::run
