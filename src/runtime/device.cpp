#include "xl/runtime/device.h"

#include <ATen/cpu/Utils.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include "xl/runtime/cuda.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::runtime {

void check_threads(int64_t threads, const std::string& what) {
  const auto cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  if (cores <= 0 || threads <= cores) {
    return;
  }
  // Threads beyond the cores take turns; many of them spend the run starting and waiting.
  if (threads > 4 * cores) {
    throw UserError(fmt::format(
        "{} {}: this machine has {} cores, and threads beyond them only wait for each other (a "
        "run slows down many times over); give at most {}, or 0 for one a core",
        what,
        threads,
        cores,
        cores));
  }
  logger().warn(
      "{} {} on {} cores: threads beyond the cores take turns, which slows the run; {} (or 0) is "
      "faster",
      what,
      threads,
      cores,
      cores);
}

torch::Device pick_device(const config::TrainConfig& train) {
  if (train.device != config::Device::kCpu && torch::cuda::is_available()) {
    return torch::kCUDA;
  }
  if (train.device == config::Device::kCuda) {
    throw UserError("train.device is cuda, but no CUDA device is available");
  }
  if (train.bf16) {
    warn_if_bf16_is_slower();
  }
  return torch::kCPU;
}

namespace {

bool cpu_has(const char* name) {
  const auto capabilities = at::cpu::get_cpu_capabilities();
  const auto it = capabilities.find(name);
  return it != capabilities.end() && it->second.isBool() && it->second.toBool();
}

} // namespace

std::string bf16_speed_warning(bool emulated, double bf16, double fp32) {
  if (emulated) {
    return fmt::format(
        "train.bf16 on a CPU without bf16 instructions (avx512_bf16, amx_bf16): bf16 matrix "
        "products run at {:.1f} GFLOP/s here against {:.1f} in float32 ({:.0f}x slower); "
        "--set train.bf16=false runs in float32",
        bf16,
        fp32,
        fp32 / bf16);
  }
  if (bf16 < fp32) {
    return fmt::format(
        "train.bf16 on a CPU with avx512_bf16 but no AMX: bf16 matrix products run at {:.1f} "
        "GFLOP/s here against {:.1f} in float32 ({:.2f}x); --set train.bf16=false may run "
        "faster",
        bf16,
        fp32,
        bf16 / fp32);
  }
  return "";
}

void warn_if_bf16_is_slower() {
  if (cpu_has("amx_bf16")) {
    return;
  }
  // About half a second in all: enough to show the order of magnitude. Emulated bf16 takes
  // small products; avx512_bf16 without AMX is measured at a size training multiplies.
  const bool emulated = !cpu_has_bf16();
  const int64_t n = emulated ? 256 : 512;
  const torch::Device cpu(torch::kCPU);
  const double bf16 = matmul_gflops(cpu, torch::kBFloat16, n, 0.2);
  const double fp32 = matmul_gflops(cpu, torch::kFloat, n, 0.2);
  if (const auto warning = bf16_speed_warning(emulated, bf16, fp32); !warning.empty()) {
    logger().warn("{}", warning);
  }
}

bool cpu_has_bf16() {
  return cpu_has("avx512_bf16") || cpu_has("amx_bf16");
}

torch::Tensor upload(const torch::Tensor& host, const torch::Device& device) {
  if (device.is_cpu()) {
    return host;
  }
  return (host.is_pinned() ? host : host.pin_memory()).to(device, /*non_blocking=*/true);
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) {
    torch::cuda::synchronize();
  }
}

double matmul_gflops(
    const torch::Device& device,
    torch::ScalarType dtype,
    int64_t n,
    double seconds) {
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  const auto a = torch::randn({n, n}, options);
  const auto b = torch::randn({n, n}, options);
  auto c = torch::mm(a, b);
  synchronize(device);
  int64_t products = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    torch::mm_out(c, a, b);
    ++products;
    if (products % 8 == 0 || !device.is_cuda()) {
      synchronize(device);
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  return 2.0 * static_cast<double>(n * n * n) * static_cast<double>(products) / elapsed / 1e9;
}

namespace {

// A number of bytes from the first line of a cgroup file ("max" or missing: no limit).
double cgroup_value(const char* path) {
  std::ifstream in(path);
  std::string value;
  if (!(in >> value) || value == "max") {
    return std::numeric_limits<double>::infinity();
  }
  try {
    return std::stod(value);
  } catch (const std::exception&) {
    return std::numeric_limits<double>::infinity();
  }
}

// What `ulimit -v` (RLIMIT_AS) and `ulimit -d` (RLIMIT_DATA) leave the process, past which an
// allocation fails however much memory the machine has.
double address_space_left() {
  double left = std::numeric_limits<double>::infinity();
  std::map<std::string, double> used; // VmSize, VmData in bytes
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib) {
      used[key] = kib * 1024;
    }
  }
  for (const auto& [resource, key] : {std::pair{RLIMIT_AS, "VmSize:"}, {RLIMIT_DATA, "VmData:"}}) {
    rlimit limit{};
    if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      left = std::min(left, static_cast<double>(limit.rlim_cur) - used[key]);
    }
  }
  return left;
}

double cpu_available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  double available = std::numeric_limits<double>::infinity();
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  // cgroup v2, then v1: a container's limit below the machine's memory.
  const double limit = std::min(
      cgroup_value("/sys/fs/cgroup/memory.max"),
      cgroup_value("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  if (limit < std::numeric_limits<double>::infinity()) {
    const double used = std::min(
        cgroup_value("/sys/fs/cgroup/memory.current"),
        cgroup_value("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
    available =
        std::min(available, limit - (used < std::numeric_limits<double>::infinity() ? used : 0));
  }
  return std::max(std::min(available, address_space_left()), 0.0);
}

} // namespace

double available_memory(const torch::Device& device) {
  if (!device.is_cuda()) {
    return cpu_available_memory();
  }
  return static_cast<double>(cuda_total_memory(device)) -
      static_cast<double>(cuda_allocated(device).reserved);
}

std::string device_name(const torch::Device& device) {
  return device.is_cuda() ? device.str() : "the CPU";
}

void setup_runtime(const config::TrainConfig& train) {
  if (train.threads > 0) {
    check_threads(train.threads, "train.threads");
    torch::set_num_threads(static_cast<int>(train.threads));
  }
  at::globalContext().setAllowTF32CuBLAS(train.tf32);
  at::globalContext().setAllowTF32CuDNN(train.tf32);
  torch::manual_seed(static_cast<uint64_t>(train.seed));
}

std::string out_of_memory(const c10::OutOfMemoryError& e) {
  std::string what = e.what_without_backtrace();
  what = what.substr(0, what.find('\n'));
  return fmt::format(
      "out of memory ({}): the model, batch, segment or memory is too large for this machine; "
      "use smaller sizes (or train.batch_chunk, train.activation_checkpointing, a smaller "
      "eval.batch_size)",
      what);
}

namespace {

class WarningsToLog : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    const std::string& message = warning.msg();
    if (message.find("find_unused_parameters=True was specified") != std::string::npos) {
      return; // the reducer looks for unused parameters because some families have them
    }
    logger().warn("LibTorch: {}", message.substr(0, message.find('\n')));
  }
};

} // namespace

void route_torch_warnings() {
  static WarningsToLog handler;
  c10::WarningUtils::set_warning_handler(&handler);
}

} // namespace xl::runtime
