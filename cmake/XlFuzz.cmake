# XL_FUZZ: the libFuzzer build (scripts/fuzz.sh). Everything xl compiles gets coverage
# instrumentation for libFuzzer and AddressSanitizer + UndefinedBehaviorSanitizer, with every
# UB report fatal; LibTorch and the other libraries stay as installed. vptr checks are off:
# they need RTTI of LibTorch's classes, which its GCC build does not give clang's runtime.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "XL_FUZZ needs clang (libFuzzer): configure with CXX=clang++")
endif()
# -O1 with line tables, as libFuzzer's and OSS-Fuzz's own builds: a fifth less compile time than
# -O3 -g, and every report still names file and line.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr
  -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -gline-tables-only)
add_link_options(-fsanitize=address,undefined)
