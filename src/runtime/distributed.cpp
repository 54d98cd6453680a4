#include "xl/runtime/distributed.h"

// The wheel ships no Gloo headers; Debian's libgloo-dev provides them. Only pointers to Gloo
// objects pass between this file and LibTorch (the backend and its options hold shared_ptrs),
// so those headers need not be of the wheel's Gloo version.
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <netdb.h>

#include <chrono>
#include <cstdlib>

#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::runtime {

namespace {

std::optional<std::string> env_string(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::optional<std::string>(value) : std::nullopt;
}

int env_int(const char* name, int min, std::optional<int> fallback = std::nullopt) {
  const auto text = env_string(name);
  if (!text) {
    if (fallback) {
      return *fallback;
    }
    throw UserError(
        fmt::format("data-parallel training needs {} in the environment (torchrun sets it)", name));
  }
  try {
    size_t used = 0;
    const int value = std::stoi(*text, &used);
    if (used == text->size() && value >= min) {
      return value;
    }
  } catch (const std::exception&) { // NOLINT(bugprone-empty-catch): reported below
  }
  throw UserError(fmt::format("{}={} is not a whole number of at least {}", name, *text, min));
}

} // namespace

std::optional<DistributedEnv> distributed_env() {
  if (!env_string("WORLD_SIZE")) {
    if (const auto rank = env_string("RANK")) {
      throw UserError(fmt::format(
          "RANK={} is set but WORLD_SIZE is not (torchrun sets both): unset RANK to train "
          "alone, or set WORLD_SIZE",
          *rank));
    }
    return std::nullopt;
  }
  DistributedEnv env;
  env.world_size = env_int("WORLD_SIZE", 1);
  env.rank = env_int("RANK", 0, env.world_size == 1 ? std::optional(0) : std::nullopt);
  if (env.rank >= env.world_size) {
    throw UserError(fmt::format("RANK={} is not below WORLD_SIZE={}", env.rank, env.world_size));
  }
  if (env.world_size == 1) {
    return std::nullopt;
  }
  env.local_rank = env_int("LOCAL_RANK", 0, 0);
  env.master_addr = env_string("MASTER_ADDR").value_or(env.master_addr);
  env.master_port = env_int("MASTER_PORT", 1, env.master_port);
  if (env.master_port > 65535) {
    throw UserError(fmt::format("MASTER_PORT={} is not a port", env.master_port));
  }
  const auto agent = env_string("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
  env.restart = env_int("TORCHELASTIC_RESTART_COUNT", 0, 0);
  return env;
}

struct Group::Impl {
  c10::intrusive_ptr<c10d::ProcessGroup> group;
};

namespace {

// c10d retries an address it cannot resolve, with a warning each time, until the timeout.
void check_master_address(const DistributedEnv& env) {
  addrinfo* found = nullptr;
  if (const int status = ::getaddrinfo(env.master_addr.c_str(), nullptr, nullptr, &found);
      status != 0) {
    throw UserError(fmt::format(
        "MASTER_ADDR={}: cannot resolve the address ({})",
        env.master_addr,
        ::gai_strerror(status)));
  }
  ::freeaddrinfo(found);
}

// What a failed connection or exchange says, in xl's words rather than c10d's or Gloo's.
std::string connection_failure(const std::string& cause) {
  const auto says = [&](const char* text) { return cause.find(text) != std::string::npos; };
  if (says("EADDRINUSE") || says("ddress already in use")) {
    return "the port is in use (another job there, or a second process started with RANK=0)";
  }
  if (says("ECONNREFUSED") || says("onnection refused")) {
    return "nothing answers there (rank 0 has not started, or has stopped)";
  }
  if (says("ECONNRESET") || says("onnection reset") || says("Broken pipe") || says("EPIPE") ||
      says("onnection closed")) {
    return "a peer closed the connection (it stopped)";
  }
  if (says("imed out") || says("imeout") || says("ETIMEDOUT")) {
    return "not every rank answered in time";
  }
  return "the connection failed";
}

// The store every rank joins within `start_timeout`; its operations then wait up to `timeout`.
c10::intrusive_ptr<c10d::Store> join_store(
    const DistributedEnv& env,
    std::chrono::milliseconds start_timeout,
    std::chrono::milliseconds timeout) {
  const auto seconds = std::chrono::duration<double>(start_timeout).count();
  logger().info(
      "rank {} of {}: waiting for the {} processes at {}:{} (up to {:g} s, "
      "train.dist_start_timeout_s)",
      env.rank,
      env.world_size,
      env.world_size,
      env.master_addr,
      env.master_port,
      seconds);
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env.master_port);
  // Rank 0 serves the store unless torchrun's agent already does.
  store_options.isServer = env.rank == 0 && !env.agent_store;
  store_options.numWorkers = env.world_size;
  store_options.timeout = start_timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    const std::string why = connection_failure(e.what());
    if (why.rfind("the port is in use", 0) == 0) {
      throw UserError(fmt::format(
          "rank {} of {}: cannot serve the ranks' meeting point at {}:{}: {}; choose another "
          "MASTER_PORT (torchrun --master-port), or give each process its own RANK",
          env.rank,
          env.world_size,
          env.master_addr,
          env.master_port,
          why));
    }
    throw UserError(fmt::format(
        "rank {} of {}: the {} processes did not all join at {}:{} within {:g} s "
        "(train.dist_start_timeout_s): {}; start every rank (torchrun --nproc-per-node {}) "
        "with the same MASTER_ADDR and MASTER_PORT, each with its own RANK",
        env.rank,
        env.world_size,
        env.world_size,
        env.master_addr,
        env.master_port,
        seconds,
        why,
        env.world_size));
  }
  store->setTimeout(timeout); // from here on the collectives' limit
  // torchrun's store outlives restarts: each restarted group has keys of its own (the last
  // group's addresses of its ranks would be read, and were dead).
  return c10::make_intrusive<c10d::PrefixStore>(fmt::format("xl/{}/", env.restart), store);
}

// NCCL on GPUs, Gloo on the CPU, as the group's default backend.
void add_backend(
    c10d::ProcessGroup& group,
    const c10::intrusive_ptr<c10d::Store>& store,
    const DistributedEnv& env,
    const torch::Device& device,
    std::chrono::milliseconds timeout) {
  if (device.is_cuda()) {
#ifdef USE_C10D_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto backend =
        c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, options);
    group.setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, backend);
    group.setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
#else
    throw UserError("this LibTorch was built without NCCL: no data-parallel training on GPUs");
#endif
    return;
  }
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // As torch.distributed does: GLOO_SOCKET_IFNAME names the interface, else this host's.
  const auto interface = env_string("GLOO_SOCKET_IFNAME");
  options->devices.push_back(
      interface ? c10d::ProcessGroupGloo::createDeviceForInterface(*interface)
                : c10d::ProcessGroupGloo::createDefaultDevice());
  auto backend =
      c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, options);
  group.setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend);
  group.setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
}

} // namespace

Group::Group(
    const DistributedEnv& env,
    const torch::Device& device,
    std::chrono::milliseconds start_timeout,
    std::chrono::milliseconds timeout)
    : rank_(env.rank),
      size_(env.world_size),
      device_(device),
      timeout_s_(std::chrono::duration<double>(timeout).count()),
      impl_(std::make_unique<Impl>()) {
  check_master_address(env);
  const auto store = join_store(env, start_timeout, timeout);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, env.rank, env.world_size);
  try {
    add_backend(*group, store, env, device, timeout);
  } catch (const c10::Error& e) { // the ranks joined the store, then could not reach each other
    throw lost("connecting the ranks", e);
  }
  impl_->group = group;
}

Group::~Group() = default;

const c10::intrusive_ptr<c10d::ProcessGroup>& Group::process_group() const {
  return impl_->group;
}

UserError Group::lost(const std::string& what, const std::exception& cause) const {
  return UserError(fmt::format(
      "rank {} of {}: {} failed: {}; another rank has probably stopped, or it did not answer "
      "within {:g} s (train.dist_timeout_s): its own error, or torchrun's, says why; the last "
      "checkpoint is kept: --resume (or torchrun --max-restarts with --auto-resume) continues "
      "from it",
      rank_,
      size_,
      what,
      connection_failure(cause.what()),
      timeout_s_));
}

template <class F>
void Group::collective(const char* what, F run) {
  try {
    run();
  } catch (const std::exception& e) {
    throw lost(what, e);
  }
}

void Group::all_reduce_sum(torch::Tensor& t) {
  collective("a sum over the ranks", [&] {
    std::vector<torch::Tensor> tensors{t.to(device_)};
    impl_->group->allreduce(tensors)->wait();
    t.copy_(tensors[0]);
  });
}

void Group::broadcast(torch::Tensor& t, int root) {
  collective("a broadcast", [&] {
    std::vector<torch::Tensor> tensors{t.to(device_)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    impl_->group->broadcast(tensors, options)->wait();
    t.copy_(tensors[0]);
  });
}

std::vector<torch::Tensor> Group::all_gather(const torch::Tensor& t) {
  std::vector<torch::Tensor> out;
  collective("a gather", [&] {
    const auto input = t.to(device_).contiguous();
    std::vector<std::vector<torch::Tensor>> outputs(1);
    for (int r = 0; r < size_; ++r) {
      outputs[0].push_back(torch::empty_like(input));
    }
    std::vector<torch::Tensor> inputs{input};
    impl_->group->allgather(outputs, inputs)->wait();
    for (auto& o : outputs[0]) {
      out.push_back(o.to(t.device()));
    }
  });
  return out;
}

bool Group::any(bool flag) {
  auto t = torch::tensor({flag ? 1.0f : 0.0f});
  all_reduce_sum(t);
  return t.item<float>() > 0;
}

void Group::barrier() {
  collective("a barrier", [&] { impl_->group->barrier()->wait(); });
}

} // namespace xl::runtime
