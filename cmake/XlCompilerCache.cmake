# Use ccache when it is installed: rebuilding LibTorch-heavy translation units dominates
# build time on small machines.
find_program(XL_CCACHE ccache)
if(XL_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${XL_CCACHE})
endif()
