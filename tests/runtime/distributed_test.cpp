#include "xl/runtime/distributed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_util.h"

namespace xl::runtime {
namespace {

using ::testing::HasSubstr;

// Sets torchrun's variables for one test and clears them after it.
class TorchrunEnv {
 public:
  explicit TorchrunEnv(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const auto& [name, value] : values) {
      ::setenv(name, value, 1);
    }
  }
  ~TorchrunEnv() {
    for (const char* name :
         {"WORLD_SIZE",
          "RANK",
          "LOCAL_RANK",
          "MASTER_ADDR",
          "MASTER_PORT",
          "TORCHELASTIC_USE_AGENT_STORE"}) {
      ::unsetenv(name);
    }
  }
  TorchrunEnv(const TorchrunEnv&) = delete;
  TorchrunEnv& operator=(const TorchrunEnv&) = delete;
};

TEST(DistributedEnv, ReadsTorchrunsVariables) {
  {
    const TorchrunEnv env({});
    EXPECT_FALSE(distributed_env().has_value()) << "not started by torchrun";
  }
  {
    const TorchrunEnv env({{"WORLD_SIZE", "1"}, {"RANK", "0"}});
    EXPECT_FALSE(distributed_env().has_value()) << "one process is no data parallelism";
  }
  const TorchrunEnv env(
      {{"WORLD_SIZE", "4"},
       {"RANK", "3"},
       {"LOCAL_RANK", "1"},
       {"MASTER_ADDR", "10.0.0.1"},
       {"MASTER_PORT", "29400"},
       {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  const auto read = distributed_env();
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->world_size, 4);
  EXPECT_EQ(read->rank, 3);
  EXPECT_EQ(read->local_rank, 1);
  EXPECT_EQ(read->master_addr, "10.0.0.1");
  EXPECT_EQ(read->master_port, 29400);
  EXPECT_TRUE(read->agent_store);
}

TEST(DistributedEnv, NamesAMissingOrMalformedVariable) {
  {
    const TorchrunEnv env({{"WORLD_SIZE", "2"}});
    EXPECT_THAT(test::user_error([] { distributed_env(); }), HasSubstr("needs RANK"));
  }
  {
    const TorchrunEnv env({{"WORLD_SIZE", "two"}, {"RANK", "0"}});
    EXPECT_THAT(
        test::user_error([] { distributed_env(); }),
        HasSubstr("WORLD_SIZE=two is not a whole number"));
  }
  {
    const TorchrunEnv env({{"WORLD_SIZE", "2"}, {"RANK", "2"}});
    EXPECT_THAT(
        test::user_error([] { distributed_env(); }), HasSubstr("RANK=2 is not below WORLD_SIZE=2"));
  }
  {
    const TorchrunEnv env({{"RANK", "1"}});
    EXPECT_THAT(
        test::user_error([] { distributed_env(); }),
        HasSubstr("RANK=1 is set but WORLD_SIZE is not"));
  }
  {
    const TorchrunEnv env({{"WORLD_SIZE", "1"}, {"RANK", "1"}});
    EXPECT_THAT(
        test::user_error([] { distributed_env(); }), HasSubstr("RANK=1 is not below WORLD_SIZE=1"));
  }
  {
    const TorchrunEnv env({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "70000"}});
    EXPECT_THAT(
        test::user_error([] { distributed_env(); }), HasSubstr("MASTER_PORT=70000 is not a port"));
  }
}

} // namespace
} // namespace xl::runtime
