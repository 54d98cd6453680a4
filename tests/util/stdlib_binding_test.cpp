// libtorch exports its own copy of some std::filesystem functions (pytorch/pytorch#133437),
// which crashes on the types of a newer libstdc++. xl's link lines name the shared libstdc++
// first (src/CMakeLists.txt) so that the dynamic linker binds those names to it; a compiler that
// links libstdc++ statically defeats that (the GPU image's did: every test that removed a folder
// crashed). This binary links as the apps do, so it checks their binding.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace xl {
namespace {

namespace fs = std::filesystem;

std::string library_of(const void* function) {
  Dl_info info{};
  if (dladdr(function, &info) == 0 || info.dli_fname == nullptr) {
    return "(no library)";
  }
  return info.dli_fname;
}

TEST(StdFilesystem, BindsToTheSharedLibstdcxxNotToLibtorch) {
  using RemoveAll = std::uintmax_t (*)(const fs::path&, std::error_code&);
  using TempDirectory = fs::path (*)();
  const auto remove_all = static_cast<RemoveAll>(&fs::remove_all);
  const auto temp_directory = static_cast<TempDirectory>(&fs::temp_directory_path);
  for (const void* function :
       {reinterpret_cast<const void*>(remove_all), reinterpret_cast<const void*>(temp_directory)}) {
    const std::string library = library_of(function);
    EXPECT_NE(library.find("libstdc++.so"), std::string::npos)
        << "std::filesystem is bound to " << library
        << ": link libstdc++ as a shared library, first (src/CMakeLists.txt)";
  }
}

} // namespace
} // namespace xl
