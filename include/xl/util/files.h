// File-system helpers shared by the data, config and checkpoint code.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace xl {

namespace fs = std::filesystem;

/// Refuses, as a UserError naming `what` and the path, a missing path, a folder, a device
/// (/dev/zero would never end) or a socket: what is left is a file or a pipe.
void check_input(const fs::path& path, const std::string& what);

/// A descriptor of `path` open for reading after check_input (blocking reads; the caller closes
/// it). Opening never waits for a named pipe's writer: a named pipe that shows neither bytes nor
/// its end within `pipe_wait` is a UserError (a writer started just after xl still counts). An
/// unnamed pipe (`|`, `<(...)`) has its writer, and is waited for as long as it takes.
int open_input(
    const fs::path& path,
    const std::string& what,
    std::chrono::milliseconds pipe_wait = std::chrono::seconds(10));

/// Receives chunks of bytes; returns normally or throws.
using ByteSink = std::function<void(const void* data, size_t size)>;

/// Streams a whole file (or pipe) through open_input into `sink`, 64 KiB at a time. A file cut
/// while it is read (it ends before the size it had when opened, or is now shorter than what was
/// read) is a UserError naming it; one that grows is read as far as it reached.
void read_file_chunks(
    const fs::path& path,
    const std::string& what,
    const ByteSink& sink,
    std::chrono::milliseconds pipe_wait = std::chrono::seconds(10));

/// Reads a whole file (or pipe) through open_input.
std::string read_file(
    const fs::path& path,
    const std::string& what = "file",
    std::chrono::milliseconds pipe_wait = std::chrono::seconds(10));

/// Writes `path` atomically: the bytes go to a temporary file next to it, which
/// is flushed to disk (fsync) and then renamed over `path`, and the directory
/// entry is synced. A crash at any point leaves either the old file or the new
/// one, never a torn mix. `produce` streams the content into the sink it is
/// given.
void atomic_write(const fs::path& path, const std::function<void(const ByteSink&)>& produce);

/// Convenience overload for content already in memory.
void atomic_write(const fs::path& path, const std::string& content);

/// Copies the file `from` (`what` names it) to `to` through atomic_write, a chunk at a time: a
/// copy never holds the whole file in memory (a trainer's heap would keep a checkpoint-sized
/// hole after each one).
void atomic_copy(const fs::path& from, const fs::path& to, const std::string& what);

/// Removes the temporaries of this process's atomic_write calls in progress, for a signal handler
/// that ends the process at once (async-signal-safe: it only unlinks).
void remove_temporaries_in_progress() noexcept;

/// Removes temporary files that an interrupted atomic_write left next to
/// `path`.
void remove_stale_temporaries(const fs::path& path);

/// Why `name` is not a plain file name (empty, "." or "..", with a '/', a control character,
/// or longer than 255 bytes), or an empty string when it is one.
std::string plain_name_problem(const std::string& name);

/// What the file system refused, in one line, when the cause is the user's path or machine (a
/// name too long, no permission, a full disk, too many open files) rather than xl; else "".
std::string file_system_refusal(const std::filesystem::filesystem_error& e);

} // namespace xl
