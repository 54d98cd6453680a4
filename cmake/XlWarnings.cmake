# xl_target_warnings(<target>): the project's warning set, as errors when XL_WERROR is ON
# (CI turns it on). Third-party headers are included as SYSTEM, so they do not trip it.
function(xl_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual)
  if(XL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
