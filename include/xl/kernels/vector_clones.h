// Clones of a hot CPU loop for AVX-512 and AVX2 machines, picked at load time: the default build
// targets plain x86-64, whose loops the compiler cannot vectorise beyond SSE2.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define XL_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define XL_VECTOR_CLONES
#endif
