// A folder replaced whole or not at all: its new content is written into a staging folder beside
// it (".<name>.staged"), then swapped in with one atomic rename (RENAME_EXCHANGE). A kill at any
// moment leaves the old folder as it was, or the new one complete, never a mix; what a kill
// left of a staging folder is removed by the next writer. The staging folder is locked while it
// is written: a second writer of the same folder is refused.
#pragma once

#include <filesystem>
#include <set>
#include <string>

namespace xl {

class StagedFolder {
 public:
  /// Stages `target` (which may not exist yet); `what` names its writer in messages ("xl-prep
  /// --out"). Another live writer of `target` is a UserError.
  StagedFolder(const std::filesystem::path& target, std::string what);
  /// Removes the staging folder unless commit() swapped it in.
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  /// Where the new content goes.
  const std::filesystem::path& path() const {
    return staging_;
  }
  /// Links the target's files that the staging folder does not hold into it (they stay, as they
  /// were), but those of the top level named in `left_out`; makes it durable, swaps it in for
  /// the target and removes the old content.
  void commit(const std::set<std::string>& left_out = {});

 private:
  /// The staging folder renamed to the target, exchanged with it when it exists.
  void swap_in(bool replacing) const;

  std::filesystem::path target_;
  std::filesystem::path staging_;
  /// the writer and the target as given, for messages ("xl-prep --out data/wt2")
  std::string what_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

} // namespace xl
