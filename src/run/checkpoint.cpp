#include "xl/run/checkpoint.h"

#include <fmt/format.h>

#include <cstring>

#include "xl/io/zip_check.h"
#include "xl/run/outputs.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/hash.h"
#include "xl/util/log.h"

namespace xl::run {

namespace {

constexpr const char* kMagicKey = "xl.magic";
constexpr const char* kMagicValue = "xl-checkpoint";
constexpr const char* kVocabularyKey = "xl.vocabulary";

// After the LibTorch archive: its length and checksum (StreamHash over its bytes).
struct Trailer {
  char magic[8];
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(Trailer) == 24, "checkpoint trailer must be 24 bytes");
constexpr char kTrailerMagic[8] = {'X', 'L', 'C', 'K', 'S', 'U', 'M', '1'};

// The archive bytes of a checkpoint file, or an error saying what is wrong with it.
struct Verified {
  std::string bytes;
  size_t length = 0;
  bool has_checksum = false;
  std::string error;
};

Verified verify(const std::filesystem::path& path) {
  Verified v;
  v.bytes = read_file(path, "checkpoint");
  v.length = v.bytes.size();
  Trailer t{};
  if (v.bytes.size() >= sizeof(t)) {
    std::memcpy(&t, v.bytes.data() + v.bytes.size() - sizeof(t), sizeof(t));
  }
  if (std::memcmp(t.magic, kTrailerMagic, sizeof(kTrailerMagic)) != 0) {
    // Written before checkpoints carried checksums, or cut short: the zip's own CRC-32s are
    // what is left to check. Without a zip header it is no checkpoint at all.
    if (v.bytes.empty()) {
      v.error = "the file is empty: a save that never completed, or not a checkpoint";
    } else if (v.bytes.compare(0, 4, "PK\x03\x04") != 0) {
      v.error = fmt::format(
          "not a checkpoint: {} bytes with neither xl's checksum at the end nor a zip "
          "archive's header",
          v.length);
    } else if (const auto zip = io::zip_records_error(v.bytes.data(), v.length); !zip.empty()) {
      v.error = "no checksum at its end (cut short, or written by an earlier xl): " + zip;
    }
    return v;
  }
  v.has_checksum = true;
  v.length = v.bytes.size() - sizeof(t);
  StreamHash hash;
  hash.update(v.bytes.data(), v.length);
  if (t.length != v.length || hash.digest() != t.checksum) {
    v.error = t.length != v.length
        ? fmt::format("{} archive bytes where {} were saved", v.length, t.length)
        : "its bytes do not match the checksum saved with them";
  }
  return v;
}

// best.pt for last.pt and the other way round.
std::filesystem::path sibling(const std::filesystem::path& path) {
  return path.parent_path() / (path.filename() == "best.pt" ? "last.pt" : "best.pt");
}

// The entries xl writes before the model's: magic, format, step, config and vocabulary.
CheckpointInfo read_info(
    torch::serialize::InputArchive& archive,
    const std::filesystem::path& path) {
  c10::IValue magic;
  if (!archive.try_read(kMagicKey, magic) || !magic.isString() ||
      magic.toStringRef() != kMagicValue) {
    throw UserError(path.string() + " is a LibTorch archive but not an xl checkpoint");
  }
  CheckpointInfo info;
  c10::IValue value;
  archive.read("xl.format", value);
  info.format = value.toInt();
  if (info.format == 1) {
    throw UserError(fmt::format(
        "{}: checkpoint format 1, written by xl 0.1 before its model interface changed "
        "(family config sections, batch-source state); this xl reads format {}. Evaluate or "
        "resume it with the xl of commit eec7ad5 (git worktree add old eec7ad5), or train "
        "again",
        path.string(),
        kCheckpointFormat));
  }
  if (info.format != kCheckpointFormat) {
    throw UserError(fmt::format(
        "{}: checkpoint format {}, this xl reads format {}; use the xl that wrote it",
        path.string(),
        info.format,
        kCheckpointFormat));
  }
  archive.read("xl.step", value);
  info.step = value.toInt();
  archive.read("xl.config", value);
  info.config = value.toStringRef();
  if (archive.try_read(kVocabularyKey, value)) {
    info.vocabulary = value.toStringRef();
  }
  return info;
}

} // namespace

void save_checkpoint(
    const std::filesystem::path& path,
    const CheckpointInfo& info,
    const std::function<void(torch::serialize::OutputArchive&)>& fill) {
  torch::serialize::OutputArchive archive;
  archive.write(kMagicKey, c10::IValue(std::string(kMagicValue)));
  archive.write("xl.format", c10::IValue(info.format));
  archive.write("xl.step", c10::IValue(info.step));
  archive.write("xl.config", c10::IValue(info.config));
  archive.write(kVocabularyKey, c10::IValue(info.vocabulary));
  fill(archive);
  atomic_write(path, [&](const ByteSink& sink) {
    // No error may reach LibTorch's writer: on a failed write it aborts the process (its
    // destructor writes the end of the archive again). The first failure is kept, the rest of
    // the archive is dropped, and the failure is rethrown once the writer is done.
    std::exception_ptr failure;
    StreamHash hash;
    uint64_t length = 0;
    archive.save_to([&](const void* data, size_t size) -> size_t {
      if (!failure) {
        try {
          sink(data, size);
          hash.update(data, size);
          length += size;
        } catch (...) {
          failure = std::current_exception();
        }
      }
      return size;
    });
    if (failure) {
      std::rethrow_exception(failure);
    }
    Trailer t{};
    std::memcpy(t.magic, kTrailerMagic, sizeof(kTrailerMagic));
    t.length = length;
    t.checksum = hash.digest();
    sink(&t, sizeof(t));
  });
}

CheckpointInfo load_checkpoint(
    const std::filesystem::path& path,
    torch::serialize::InputArchive& archive) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw UserError("checkpoint not found: " + path.string());
  }
  const Verified file = verify(path);
  if (!file.error.empty()) {
    const auto other = sibling(path);
    std::error_code exists;
    std::string hint;
    if (std::filesystem::exists(other, exists)) {
      hint = verify(other).error.empty() ? fmt::format("; {} still verifies", other.string())
                                         : fmt::format("; {} is corrupt too", other.string());
    }
    throw UserError(fmt::format("corrupt checkpoint: {} ({}){}", path.string(), file.error, hint));
  }
  if (!file.has_checksum) {
    logger().warn(
        "{} has no checksum (written by an older xl): checked with its zip CRC-32s only",
        path.string());
  }
  // LibTorch reports a malformed archive, a missing entry or one of another type as a
  // c10::Error, and malformed TorchScript inside it as a torch::jit::ErrorReport; each is a
  // corrupt file here.
  const auto corrupt = [&](const std::string& reason) {
    return UserError(
        "cannot read checkpoint " + path.string() +
        " (not a LibTorch archive, or corrupt): " + reason);
  };
  try {
    archive.load_from(file.bytes.data(), file.length);
    return read_info(archive, path);
  } catch (const UserError&) {
    throw;
  } catch (const c10::Error& e) {
    throw corrupt(e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw corrupt(e.what());
  }
}

void require_same_vocabulary(
    const std::filesystem::path& checkpoint,
    const std::string& saved,
    const std::string& current,
    const std::filesystem::path& current_file) {
  if (saved.empty() || current.empty() || saved == current) {
    return;
  }
  // A run keeps the vocabulary it was trained on beside its config (infer/run_tokenizer.h).
  std::string fix = "prepare the data again with the vocabulary it was trained on";
  const auto run = enclosing_run(checkpoint);
  for (const auto& [kept, flag] :
       {std::pair{"vocab.txt", "--vocab"}, {"spiece.model", "--spm-model"}}) {
    std::error_code ec;
    if (run && std::filesystem::is_regular_file(*run / kept, ec) &&
        !std::filesystem::equivalent(*run / kept, current_file, ec)) {
      fix = fmt::format(
          "the run keeps the one it was trained on, {}: set data.dir to data prepared with it "
          "(xl-prep {} {} ...)",
          (*run / kept).string(),
          flag,
          (*run / kept).string());
    }
  }
  throw UserError(fmt::format(
      "{} was trained on data with another vocabulary ({}) than data.dir holds now ({}: {}); {}",
      checkpoint.string(),
      saved,
      current_file.string(),
      current,
      fix));
}

} // namespace xl::run
