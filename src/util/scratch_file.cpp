#include "xl/util/scratch_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "xl/util/error.h"

namespace xl {

namespace {

// A file that no folder lists: O_TMPFILE where the file system has it, else made and unlinked.
int unlinked_file(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) {
    return fd;
  }
  std::string name = (dir / "xl-scratch.XXXXXX").string();
  const int made = ::mkostemp(name.data(), O_CLOEXEC);
  if (made >= 0) {
    ::unlink(name.c_str());
  }
  return made;
}

} // namespace

std::filesystem::path scratch_dir() {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir == nullptr || *tmpdir == '\0') {
    return "/tmp";
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(tmpdir, ec)) {
    throw UserError(fmt::format(
        "TMPDIR={} is not a folder (scratch files go there); set it to one, or unset it for "
        "/tmp",
        tmpdir));
  }
  return tmpdir;
}

ScratchFile::ScratchFile(const std::filesystem::path& dir, std::string what)
    : what_(std::move(what)), dir_(dir.empty() ? std::filesystem::path(".") : dir) {
  fd_ = unlinked_file(dir_);
  if (fd_ < 0) {
    throw UserError(fmt::format(
        "cannot make scratch space for {} in {}: {}", what_, dir_.string(), std::strerror(errno)));
  }
}

ScratchFile::ScratchFile(std::string what) : what_(std::move(what)) {}

ScratchFile ScratchFile::in_memory(std::string what) {
  return ScratchFile(std::move(what));
}

ScratchFile::ScratchFile(ScratchFile&& other) noexcept
    : what_(std::move(other.what_)),
      dir_(std::move(other.dir_)),
      fd_(std::exchange(other.fd_, -1)),
      memory_(std::move(other.memory_)),
      size_(other.size_) {}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void ScratchFile::write_at(uint64_t offset, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  if (fd_ < 0) {
    if (offset + size > memory_.size()) {
      memory_.resize(offset + size, '\0');
    }
    std::memcpy(memory_.data() + offset, bytes, size);
    size_ = memory_.size();
    return;
  }
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd_, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      throw UserError(fmt::format(
          "cannot write the scratch space of {} in {}: {}",
          what_,
          dir_.string(),
          n < 0 ? std::strerror(errno) : "nothing written"));
    }
    done += static_cast<size_t>(n);
  }
  size_ = std::max<uint64_t>(size_, offset + size);
}

void ScratchFile::append(const void* data, size_t size) {
  write_at(size_, data, size);
}

void ScratchFile::read_at(uint64_t offset, void* data, size_t size) const {
  if (offset + size > size_) {
    throw std::logic_error(fmt::format(
        "scratch of {}: {} bytes at {} read past its {} bytes", what_, size, offset, size_));
  }
  auto* bytes = static_cast<char*>(data);
  if (fd_ < 0) {
    std::memcpy(bytes, memory_.data() + offset, size);
    return;
  }
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd_, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      throw UserError(fmt::format(
          "cannot read the scratch space of {}: {}",
          what_,
          n < 0 ? std::strerror(errno) : "unexpected end"));
    }
    done += static_cast<size_t>(n);
  }
}

void ScratchFile::resize(uint64_t size) {
  if (fd_ < 0) {
    memory_.resize(size, '\0');
    size_ = size;
    return;
  }
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    throw UserError(fmt::format(
        "cannot size the scratch space of {} in {} to {} bytes: {}",
        what_,
        dir_.string(),
        size,
        std::strerror(errno)));
  }
  size_ = size;
}

} // namespace xl
