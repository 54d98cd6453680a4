#include "xl/run/tensorboard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "xl/util/crc.h"
#include "xl/util/error.h"

namespace xl::run {
namespace {

// Protobuf wire format: a field's key is (number << 3) | wire type.
enum Wire : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, int field, Wire wire) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | wire);
}

template <class T>
void put_little_endian(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T)); // x86-64 and aarch64 are little-endian
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kBytes);
  put_varint(out, bytes.size());
  out += bytes;
}

// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), then one of file_version = 3,
// summary = 5, session_log = 6.
std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, kFixed64);
  put_little_endian(e, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

uint32_t masked_crc(const char* data, size_t size) {
  const uint32_t crc = util::crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

} // namespace

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(const std::filesystem::path& dir) {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double now = wall_time_now();
  path_ = dir /
      fmt::format("events.out.tfevents.{}.{}.{}", static_cast<int64_t>(now), host, ::getpid());
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw UserError(fmt::format(
        "cannot create TensorBoard event file {}: {}", path_.string(), std::strerror(errno)));
  }
  std::string e = event_header(now, 0);
  put_bytes(e, 3, "brain.Event:2");
  append(e);
}

EventWriter::~EventWriter() {
  ::close(fd_);
}

void EventWriter::scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  // Summary.Value: tag = 1, simple_value = 2 (float); Summary: value = 1 (repeated).
  std::string v;
  put_bytes(v, 1, tag);
  put_key(v, 2, kFixed32);
  put_little_endian(v, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  append(e);
}

void EventWriter::restart(int64_t step, double wall_time) {
  // SessionLog: status = 1, START = 1.
  std::string log;
  put_key(log, 1, kVarint);
  put_varint(log, 1);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 6, log);
  append(e);
}

void EventWriter::append(const std::string& event) {
  // TFRecord: length (uint64), its masked CRC-32C, the data, the data's masked CRC-32C.
  std::string record;
  const uint64_t length = event.size();
  put_little_endian(record, length);
  put_little_endian(record, masked_crc(record.data(), sizeof length));
  record += event;
  put_little_endian(record, masked_crc(event.data(), event.size()));
  if (::write(fd_, record.data(), record.size()) != static_cast<ssize_t>(record.size())) {
    throw UserError(fmt::format(
        "cannot append to TensorBoard event file {}: {}", path_.string(), std::strerror(errno)));
  }
}

void write_events(EventWriter& writer, const nlohmann::json& record, double wall_time) {
  if (record.value("event", "") == "resumed") {
    writer.restart(record["step"].get<int64_t>() + 1, wall_time);
    return;
  }
  if (!record.contains("split") || !record.contains("step") ||
      !record["step"].is_number_integer()) {
    return;
  }
  static const std::set<std::string> kNotCurves = {
      "step", "tokens", "batches", "pass_batches", "epoch", "repeat", "partial"};
  std::string prefix = record["split"].get<std::string>() + "/";
  if (record.contains("mode")) {
    prefix += record["mode"].get<std::string>() + "/";
  }
  const auto step = record["step"].get<int64_t>();
  for (const auto& [key, value] : record.items()) {
    if (value.is_number() && kNotCurves.count(key) == 0) {
      writer.scalar(prefix + key, value.get<double>(), step, wall_time);
    }
  }
}

} // namespace xl::run
