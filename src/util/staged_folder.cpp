#include "xl/util/staged_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "xl/util/error.h"

namespace xl {

namespace fs = std::filesystem;

namespace {

// The staging folder's name beside `target` (absolute, so that "." or "a/.." has a name and a
// parent): hidden, and the same for every writer, so that a second writer finds the first.
fs::path staging_of(const fs::path& target) {
  fs::path clean = fs::absolute(target).lexically_normal();
  if (clean.filename().empty()) {
    clean = clean.parent_path(); // a trailing slash
  }
  return clean.parent_path() / ("." + clean.filename().string() + ".staged");
}

// Makes `dir` and locks it (flock on the folder itself); -1 when it exists already, or when
// another writer took it over between the two (it is then no longer the folder at `dir`).
int make_locked(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0) {
    return -1;
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat held {};
  struct stat there {};
  if (fd >= 0 &&
      (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &held) != 0 ||
       ::stat(dir.c_str(), &there) != 0 || held.st_ino != there.st_ino ||
       held.st_dev != there.st_dev)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Hard links of `from`'s files (folders recreated) into `to` where `to` has none of that name,
// those named in `left_out` left out.
void link_missing(
    const fs::path& from,
    const fs::path& to,
    const std::set<std::string>& left_out = {}) {
  for (const auto& entry : fs::directory_iterator(from)) {
    const fs::path there = to / entry.path().filename();
    std::error_code ec;
    if (fs::exists(fs::symlink_status(there, ec)) ||
        left_out.count(entry.path().filename().string()) > 0) {
      continue; // written anew, or to go
    }
    if (entry.is_directory() && !entry.is_symlink()) {
      fs::create_directory(there);
      link_missing(entry.path(), there);
    } else if (entry.is_symlink()) {
      fs::copy_symlink(entry.path(), there);
    } else {
      fs::create_hard_link(entry.path(), there);
    }
  }
}

void sync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

namespace {

// The folder to replace, absolute: a link to a folder is followed (the folder it leads to is
// replaced, and the link stays). The root has no folder beside it.
fs::path resolved(const fs::path& target, const std::string& what) {
  std::error_code ec;
  fs::path clean = fs::absolute(target).lexically_normal();
  if (clean.filename().empty()) {
    clean = clean.parent_path();
  }
  if (fs::is_symlink(clean, ec)) {
    clean = fs::weakly_canonical(clean, ec);
  }
  if (clean == clean.root_path()) {
    throw UserError(fmt::format(
        "{} {}: the root folder cannot be replaced; name a folder inside it",
        what,
        target.string()));
  }
  return clean;
}

} // namespace

StagedFolder::StagedFolder(const fs::path& target, std::string what)
    : target_(resolved(target, what)),
      staging_(staging_of(target_)),
      what_(std::move(what) + " " + target.string()) {
  std::error_code made;
  fs::create_directories(staging_.parent_path(), made); // the folders above a new target
  // swap_in's two renames, killed between them: the old folder back where it was.
  const fs::path aside = staging_.string() + ".old";
  if (!fs::exists(target_, made) && fs::is_directory(aside, made)) {
    fs::rename(aside, target_, made);
  }
  for (int attempt = 0; attempt < 3 && lock_fd_ < 0; ++attempt) {
    lock_fd_ = make_locked(staging_);
    if (lock_fd_ >= 0) {
      break;
    }
    // A staging folder: a live writer's (locked), or what a killed one left (removed).
    const int fd = ::open(staging_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool live = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0;
    if (fd >= 0) {
      ::close(fd);
    }
    if (live) {
      throw UserError(fmt::format(
          "{}: another process is writing it now (its staging folder {} is locked); wait for "
          "it to end",
          what_,
          staging_.string()));
    }
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  if (lock_fd_ < 0) {
    throw UserError(fmt::format(
        "{}: cannot make its staging folder {}: {}",
        what_,
        staging_.string(),
        std::strerror(errno)));
  }
}

StagedFolder::~StagedFolder() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);
  }
}

void StagedFolder::commit(const std::set<std::string>& left_out) {
  std::error_code ec;
  const bool replacing = fs::exists(target_, ec);
  // The old folder is locked before the swap puts it at the staging path, so that a second
  // writer waits for its removal instead of taking it for a killed writer's.
  int old_fd = -1;
  if (replacing) {
    link_missing(target_, staging_, left_out);
    old_fd = ::open(target_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (old_fd >= 0) {
      ::flock(old_fd, LOCK_EX | LOCK_NB);
    }
  }
  for (const auto& entry : fs::recursive_directory_iterator(staging_)) {
    sync_path(entry.path());
  }
  sync_path(staging_);
  swap_in(replacing);
  committed_ = true;
  sync_path(target_.parent_path().empty() ? fs::path(".") : target_.parent_path());
  fs::remove_all(staging_, ec); // the old content
  if (old_fd >= 0) {
    ::close(old_fd);
  }
  ::close(lock_fd_);
  lock_fd_ = -1;
}

void StagedFolder::swap_in(bool replacing) const {
  const auto failed = [&](const std::string& how) {
    return UserError(fmt::format(
        "{}: cannot {} ({}); the old folder is as it was", what_, how, std::strerror(errno)));
  };
  if (!replacing) {
    if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
      throw failed("move " + staging_.string() + " there");
    }
    return;
  }
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    return;
  }
  if (errno != EINVAL && errno != ENOSYS) {
    throw failed("swap the new folder " + staging_.string() + " in for it");
  }
  // A file system without RENAME_EXCHANGE: two renames, the old folder aside first (a kill
  // between the two leaves it at <staging>.old, and the new one complete at the staging path).
  const fs::path aside = staging_.string() + ".old";
  std::error_code ec;
  fs::remove_all(aside, ec);
  if (std::rename(target_.c_str(), aside.c_str()) != 0) {
    throw failed("move it aside to " + aside.string());
  }
  if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
    std::rename(aside.c_str(), target_.c_str());
    throw failed("move " + staging_.string() + " there");
  }
  std::rename(aside.c_str(), staging_.c_str()); // removed with the staging folder
}

} // namespace xl
