# Finds every external dependency.
#
# LibTorch: taken from Torch_DIR / CMAKE_PREFIX_PATH when given (a pytorch.org libtorch zip or
# any torch install). In a project that found an installed xl (xlConfig.cmake sets
# XL_BUILT_WITH_TORCH_DIR), the LibTorch xl was built with is the fallback; in xl's own build,
# the Python interpreter's torch wheel (torch.utils.cmake_prefix_path), preferring the project's
# .venv made by scripts/bootstrap.sh. Torch is searched once where it is found (each search
# that finds it prints LibTorch's own warnings again).

# A CUDA build of LibTorch (the PyPI wheel is one) cannot be configured without the CUDA
# toolkit, even for the CPU: said in one line before LibTorch's own error.
function(xl_require_cuda_toolkit torch_dir)
  if(NOT EXISTS "${torch_dir}/../Caffe2/Caffe2Config.cmake")
    return()
  endif()
  file(STRINGS "${torch_dir}/../Caffe2/Caffe2Config.cmake" uses_cuda
    REGEX "set\\(CAFFE2_USE_CUDA ON\\)")
  if(NOT uses_cuda)
    return()
  endif()
  find_program(XL_NVCC nvcc HINTS ${CUDAToolkit_ROOT} ENV CUDAToolkit_ROOT ENV CUDA_PATH
    PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
  if(NOT XL_NVCC)
    message(FATAL_ERROR "LibTorch at ${torch_dir} is a CUDA build, which configures only with "
      "the CUDA toolkit (nvcc), even to run on the CPU: install it (or set CUDAToolkit_ROOT), or "
      "use a CPU build of LibTorch (-DTorch_DIR=<libtorch>/share/cmake/Torch)")
  endif()
endfunction()

if(NOT Torch_DIR OR Torch_DIR MATCHES "-NOTFOUND$")
  # The prefixes the project gave first, then the LibTorch xl was built with.
  find_path(XL_TORCH_CONFIG_DIR TorchConfig.cmake PATH_SUFFIXES share/cmake/Torch Torch
    HINTS ${XL_BUILT_WITH_TORCH_DIR} NO_CACHE)
  if(XL_TORCH_CONFIG_DIR)
    set(Torch_DIR ${XL_TORCH_CONFIG_DIR} CACHE PATH "The folder of TorchConfig.cmake" FORCE)
  endif()
endif()
if(Torch_DIR AND NOT Torch_DIR MATCHES "-NOTFOUND$")
  xl_require_cuda_toolkit(${Torch_DIR})
  find_package(Torch CONFIG QUIET)
endif()
if(NOT Torch_FOUND AND Torch_DIR AND NOT Torch_DIR MATCHES "-NOTFOUND$")
  message(FATAL_ERROR "LibTorch not found at Torch_DIR=${Torch_DIR}: pass the folder that holds "
    "TorchConfig.cmake (<libtorch>/share/cmake/Torch, or <torch wheel>/share/cmake/Torch)")
endif()
if(NOT Torch_FOUND AND DEFINED XL_BUILT_WITH_TORCH_DIR)
  message(FATAL_ERROR "LibTorch not found: xl was built with the one in "
    "${XL_BUILT_WITH_TORCH_DIR}, which is not there; pass -DTorch_DIR=<libtorch>/share/cmake/Torch "
    "(a torch wheel's: python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' + /Torch)")
endif()
if(NOT Torch_FOUND)
  if(NOT Python3_EXECUTABLE AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python)
    set(Python3_EXECUTABLE ${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python)
  endif()
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE XL_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE XL_TORCH_RESULT ERROR_QUIET)
  if(NOT XL_TORCH_RESULT EQUAL 0)
    message(FATAL_ERROR "LibTorch not found: run scripts/bootstrap.sh (it installs the pinned "
      "torch wheel into .venv), or pass -DTorch_DIR=<libtorch>/share/cmake/Torch.")
  endif()
  xl_require_cuda_toolkit(${XL_TORCH_PREFIX}/Torch)
  list(APPEND CMAKE_PREFIX_PATH ${XL_TORCH_PREFIX})
  find_package(Torch REQUIRED CONFIG)
endif()
message(STATUS "xl: LibTorch ${Torch_VERSION} from ${Torch_DIR}")

find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.2 REQUIRED)
find_package(Threads REQUIRED)
# SentencePiece ships no CMake package; look it up directly so that an unpacked prefix on
# CMAKE_PREFIX_PATH works as well as the system one.
find_path(XL_SENTENCEPIECE_INCLUDE sentencepiece_processor.h REQUIRED)
find_library(XL_SENTENCEPIECE_LIBRARY sentencepiece REQUIRED)
add_library(xl_sentencepiece INTERFACE IMPORTED)
target_include_directories(xl_sentencepiece SYSTEM INTERFACE ${XL_SENTENCEPIECE_INCLUDE})
target_link_libraries(xl_sentencepiece INTERFACE ${XL_SENTENCEPIECE_LIBRARY})
# The trainer (xl-prep trains XLNet's vocabulary) is a library of its own, which only the prep
# layer links.
find_library(XL_SENTENCEPIECE_TRAIN_LIBRARY sentencepiece_train REQUIRED)
add_library(xl_sentencepiece_train INTERFACE IMPORTED)
target_link_libraries(xl_sentencepiece_train INTERFACE ${XL_SENTENCEPIECE_TRAIN_LIBRARY}
  xl_sentencepiece)

# cairo draws xl-compare's learning-curve plots (PNG): the lab layer alone links it.
find_package(PkgConfig REQUIRED)
pkg_check_modules(XL_CAIRO REQUIRED IMPORTED_TARGET cairo)

# yaml-cpp 0.7 exports the plain target name `yaml-cpp`; newer versions add a namespace.
if(TARGET yaml-cpp::yaml-cpp)
  set(XL_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(XL_YAML_TARGET yaml-cpp)
endif()

# The torch wheel ships fmt 12 headers in its include folder, which would shadow the fmt that
# spdlog was built against. A folder linking to the real fmt and spdlog headers goes first on
# the include path (torch/torch.h itself does not include fmt).
set(XL_SHIM_INCLUDE ${CMAKE_BINARY_DIR}/shim-include)
file(MAKE_DIRECTORY ${XL_SHIM_INCLUDE})
foreach(dep fmt spdlog)
  get_target_property(_dirs ${dep}::${dep} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _dirs)
    set(_dirs /usr/include)
  endif()
  find_path(XL_${dep}_HEADERS ${dep} PATHS ${_dirs} NO_DEFAULT_PATH)
  if(NOT XL_${dep}_HEADERS)
    find_path(XL_${dep}_HEADERS ${dep} PATHS /usr/include NO_DEFAULT_PATH REQUIRED)
  endif()
  file(CREATE_LINK ${XL_${dep}_HEADERS}/${dep} ${XL_SHIM_INCLUDE}/${dep} SYMBOLIC)
endforeach()

# xl_add_dependencies_target(<name> [IMPORTED]): the target of what every part of xl compiles
# and links against: xl_dependencies in xl's own build, xl::dependencies (IMPORTED) in a project
# that found xl (lib/cmake/xl/xlConfig.cmake includes this file). What one layer needs alone is
# linked by that layer (src/CMakeLists.txt: cairo, CLI11, SentencePiece's trainer), so that a
# program linking xl::xl links none of them.
function(xl_add_dependencies_target name)
  add_library(${name} INTERFACE ${ARGN})
  target_include_directories(${name} SYSTEM BEFORE INTERFACE ${XL_SHIM_INCLUDE})
  target_link_libraries(${name} INTERFACE
    ${TORCH_LIBRARIES} ${XL_YAML_TARGET} spdlog::spdlog fmt::fmt nlohmann_json::nlohmann_json
    xl_sentencepiece Threads::Threads)
  # libtorch.so exports a broken copy of some std::filesystem functions (remove_all crashes).
  # Naming libstdc++ first on every link line makes the dynamic linker bind those symbols to
  # the real libstdc++ before it looks into libtorch.so.
  target_link_options(${name} INTERFACE "LINKER:--push-state,--no-as-needed" "-lstdc++"
    "LINKER:--pop-state")
endfunction()
