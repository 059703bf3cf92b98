# Shared by tests/regress and tests/bench: one executable per program of
# the including folder (below), linked against a libuv built elsewhere
# (patched or the pristine base), so base and patched run the very same
# program.
cmake_minimum_required(VERSION 3.13)

set(UV_SOURCE_DIR "" CACHE PATH "libuv source tree (for include/)")
set(UV_LIBRARY "" CACHE FILEPATH "static libuv built from UV_SOURCE_DIR")
if(NOT UV_SOURCE_DIR OR NOT UV_LIBRARY)
  message(FATAL_ERROR "set UV_SOURCE_DIR and UV_LIBRARY (scripts/uvpatch build does)")
endif()

find_package(Threads REQUIRED)
if(WIN32)
  set(uv_link_libraries ws2_32 iphlpapi userenv dbghelp ole32 shell32 psapi)
else()
  set(uv_link_libraries Threads::Threads ${CMAKE_DL_LIBS})
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    list(APPEND uv_link_libraries rt m)
  endif()
endif()

# A program is a *.c file, or a folder whose *.c files link into one
# executable named after it (its cases in files of their own).
file(GLOB uvpatch_sources CONFIGURE_DEPENDS
     "${CMAKE_CURRENT_SOURCE_DIR}/*.c" "${CMAKE_CURRENT_SOURCE_DIR}/*/*.c")
set(uvpatch_programs "")
foreach(source ${uvpatch_sources})
  get_filename_component(folder "${source}" DIRECTORY)
  if(folder STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    get_filename_component(name "${source}" NAME_WE)
    if(EXISTS "${folder}/${name}")
      message(FATAL_ERROR "${name}: both a file and a folder of programs")
    endif()
  else()
    get_filename_component(name "${folder}" NAME)
  endif()
  list(APPEND uvpatch_programs ${name})
  list(APPEND uvpatch_sources_${name} "${source}")
endforeach()
if(uvpatch_programs)
  list(REMOVE_DUPLICATES uvpatch_programs)
endif()
foreach(name ${uvpatch_programs})
  add_executable(${name} ${uvpatch_sources_${name}})
  # harness.h beside the programs, the shared helpers in common/.
  target_include_directories(${name} PRIVATE "${UV_SOURCE_DIR}/include"
                             "${CMAKE_CURRENT_SOURCE_DIR}"
                             "${CMAKE_CURRENT_LIST_DIR}/common")
  target_link_libraries(${name} PRIVATE "${UV_LIBRARY}" ${uv_link_libraries})
  if(MINGW)
    # Static runtime: the programs run under Wine with no DLLs beside them.
    target_link_options(${name} PRIVATE -static)
  endif()
endforeach()
