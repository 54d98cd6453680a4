#include "xl/util/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>

#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

void sync_directory(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// The temporaries of the atomic writes in progress, for remove_temporaries_in_progress: fixed
// slots that a signal handler reads without allocating or locking. A write that finds every slot
// taken goes unlisted (the next write of its file removes its temporary).
struct InProgressSlot {
  std::atomic<int> state{0}; // 0 free, 1 being filled, 2 listed
  std::array<char, PATH_MAX> path{};
};
std::array<InProgressSlot, 16> in_progress;

class ListedTemporary {
 public:
  explicit ListedTemporary(const fs::path& tmp) {
    const std::string& name = tmp.native();
    for (auto& slot : in_progress) {
      int free = 0;
      if (name.size() < PATH_MAX && slot.state.compare_exchange_strong(free, 1)) {
        std::memcpy(slot.path.data(), name.c_str(), name.size() + 1);
        slot.state.store(2);
        slot_ = &slot;
        return;
      }
    }
  }
  ~ListedTemporary() {
    if (slot_ != nullptr) {
      slot_->state.store(0);
    }
  }
  ListedTemporary(const ListedTemporary&) = delete;
  ListedTemporary& operator=(const ListedTemporary&) = delete;
  ListedTemporary(ListedTemporary&&) = delete;
  ListedTemporary& operator=(ListedTemporary&&) = delete;

 private:
  InProgressSlot* slot_ = nullptr;
};

// Temporaries are "<name>.tmp.<pid>" so that concurrent writers never share one
// and stale ones are recognisable.
std::string temporary_prefix(const fs::path& path) {
  return path.filename().string() + ".tmp.";
}

// Whether open descriptor `fd` is a pipe no folder names ("pipe:[inode]" in /proc).
bool unnamed_pipe(int fd) {
  std::error_code ec;
  const auto target = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
  return !ec && target.native().rfind("pipe:", 0) == 0;
}

} // namespace

void check_input(const fs::path& path, const std::string& what) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) {
    throw UserError(what + " not found: " + path.string());
  }
  if (fs::is_directory(status)) {
    throw UserError(what + " is a directory, expected a file: " + path.string());
  }
  // A device such as /dev/zero never ends; pipes and process substitutions do, and pass.
  if (fs::is_character_file(status) || fs::is_block_file(status) || fs::is_socket(status)) {
    throw UserError(
        what + " is a " + (fs::is_socket(status) ? "socket" : "device") +
        ", expected a file: " + path.string());
  }
}

int open_input(const fs::path& path, const std::string& what, std::chrono::milliseconds pipe_wait) {
  check_input(path, what);
  // O_NONBLOCK: opening a named pipe that nothing writes to would wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  const auto refuse = [&](const std::string& reason) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw UserError("cannot read " + what + " " + path.string() + ": " + reason);
  };
  if (fd < 0) {
    refuse(errno_text());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    refuse(errno_text());
  }
  // A named pipe's writer may start just after us (`mkfifo f; make_text > f & xl-eval --file
  // f`): wait a while for its first bytes (or its end), not forever. An unnamed pipe (a shell's
  // `|` or `<(make_text)`) has its writer from the start, however slowly it begins.
  if (S_ISFIFO(st.st_mode)) {
    pollfd ready{fd, POLLIN, 0};
    int n = 0;
    while ((n = ::poll(&ready, 1, static_cast<int>(pipe_wait.count()))) < 0 && errno == EINTR) {
    }
    if (n == 0 && unnamed_pipe(fd)) {
      logger().info("{} {}: waiting for the first bytes of its pipe", what, path.string());
      while ((n = ::poll(&ready, 1, -1)) < 0 && errno == EINTR) {
      }
    }
    if (n == 0) {
      ::close(fd);
      throw UserError(fmt::format(
          "{} {} is a pipe that nothing wrote to in {:g} s: start its writer first, or give a "
          "regular file",
          what,
          path.string(),
          static_cast<double>(pipe_wait.count()) / 1000.0));
    }
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    refuse(errno_text());
  }
  return fd;
}

namespace {

// The size of a regular file open as `fd`, or -1 for a pipe or a device.
off_t regular_size(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
}

// A file cut while it is read ends early: fewer bytes than it held when opened, or than it holds
// now. One that grows (a log being written) is read up to where it was.
// (A size of 0, as /proc's files show, says nothing.)
void check_whole(const fs::path& path, const std::string& what, int fd, off_t opened, off_t read) {
  const off_t now = regular_size(fd);
  if (opened > 0 && (read < opened || (now >= 0 && now < read))) {
    throw UserError(fmt::format(
        "{} {} was cut while it was read ({} bytes when opened, {} read, {} now): something is "
        "writing it; read it once it is whole",
        what,
        path.string(),
        opened,
        read,
        now));
  }
}

} // namespace

void read_file_chunks(
    const fs::path& path,
    const std::string& what,
    const ByteSink& sink,
    std::chrono::milliseconds pipe_wait) {
  const int fd = open_input(path, what, pipe_wait);
  const off_t opened = regular_size(fd);
  off_t total = 0;
  std::array<char, 1 << 16> buffer{};
  try {
    for (;;) {
      const ssize_t got = ::read(fd, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0) {
        throw UserError("cannot read " + what + " " + path.string() + ": " + errno_text());
      }
      if (got == 0) {
        break;
      }
      total += got;
      sink(buffer.data(), static_cast<size_t>(got));
    }
    check_whole(path, what, fd, opened, total);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::string read_file(
    const fs::path& path,
    const std::string& what,
    std::chrono::milliseconds pipe_wait) {
  std::string out;
  read_file_chunks(
      path,
      what,
      [&](const void* data, size_t size) { out.append(static_cast<const char*>(data), size); },
      pipe_wait);
  return out;
}

void atomic_write(const fs::path& path, const std::function<void(const ByteSink&)>& produce) {
  const fs::path dir = path.parent_path();
  if (!dir.empty()) {
    fs::create_directories(dir);
  }
  remove_stale_temporaries(path);
  const fs::path tmp = dir / (temporary_prefix(path) + std::to_string(::getpid()));
  const ListedTemporary listed(tmp);
  FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) {
    throw UserError("cannot write " + tmp.string() + ": " + errno_text());
  }
  try {
    produce([&](const void* data, size_t size) {
      if (size > 0 && std::fwrite(data, 1, size, file) != size) {
        throw UserError(
            "cannot write " + path.string() + ": " + errno_text() + " (in the file system of " +
            (dir.empty() ? fs::path(".") : dir).string() + "); the previous file is kept");
      }
    });
    if (std::fflush(file) != 0 || ::fsync(::fileno(file)) != 0) {
      throw UserError("cannot flush " + tmp.string() + ": " + errno_text());
    }
  } catch (...) {
    std::fclose(file);
    std::remove(tmp.c_str());
    throw;
  }
  std::fclose(file);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    std::remove(tmp.c_str());
    throw UserError("cannot rename " + tmp.string() + " to " + path.string() + ": " + reason);
  }
  sync_directory(dir);
}

void atomic_write(const fs::path& path, const std::string& content) {
  atomic_write(path, [&](const ByteSink& sink) { sink(content.data(), content.size()); });
}

void atomic_copy(const fs::path& from, const fs::path& to, const std::string& what) {
  atomic_write(to, [&](const ByteSink& sink) { read_file_chunks(from, what, sink); });
}

void remove_temporaries_in_progress() noexcept {
  for (auto& slot : in_progress) {
    if (slot.state.load() == 2) {
      ::unlink(slot.path.data());
    }
  }
}

void remove_stale_temporaries(const fs::path& path) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return;
  }
  const std::string prefix = temporary_prefix(path);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
}

std::string plain_name_problem(const std::string& name) {
  if (name.empty()) {
    return "found an empty one";
  }
  if (name == "." || name == "..") {
    return "found the name of a folder";
  }
  if (name.size() > 255) {
    return "found one of " + std::to_string(name.size()) + " bytes (at most 255)";
  }
  for (const char c : name) {
    if (c == '/') {
      return "found a path";
    }
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "found a control character";
    }
  }
  return "";
}

std::string file_system_refusal(const std::filesystem::filesystem_error& e) {
  const int code = e.code().value();
  if (e.code().category() != std::generic_category() &&
      e.code().category() != std::system_category()) {
    return "";
  }
  static const std::set<int> kTheirs = {
      ENAMETOOLONG,
      EACCES,
      EPERM,
      ENOSPC,
      EDQUOT,
      EROFS,
      ELOOP,
      EMFILE,
      ENFILE,
      EFBIG,
      ENOTDIR,
      EXDEV};
  if (kTheirs.count(code) == 0) {
    return "";
  }
  const std::string path = e.path1().empty() ? std::string() : e.path1().string() + ": ";
  const std::string hint =
      code == ENAMETOOLONG ? " (a name has at most 255 bytes): choose a shorter one" : "";
  return path + e.code().message() + hint;
}

} // namespace xl
