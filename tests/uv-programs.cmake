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

# uvpatch_series.h tells the programs which patches the libuv they link
# carries: UVPATCH_IN_SERIES_<ID> for each patch of the series it was
# built from (patches/<UVPATCH_SERIES>/; the unpatched base's build too),
# UVPATCH_IN_TREE_<ID> for each one its tree has (UVPATCH_APPLIED, the
# patch files; all of the series when not given, as for an installed
# libuv built from it). <ID> is the file name without its number and
# .patch, as a C identifier in upper case.
set(UVPATCH_SERIES "" CACHE STRING
    "the series the libuv comes from: a folder of patches/")
set(uvpatch_generated "${CMAKE_CURRENT_BINARY_DIR}/uvpatch-series")
set(uvpatch_text "/* Written by tests/uv-programs.cmake: the patches of the series the\n"
    " * linked libuv comes from, and those its tree carries. */\n")
if(UVPATCH_SERIES)
  set(uvpatch_folder "${CMAKE_CURRENT_LIST_DIR}/../patches/${UVPATCH_SERIES}")
  if(NOT IS_DIRECTORY "${uvpatch_folder}")
    message(FATAL_ERROR "UVPATCH_SERIES=${UVPATCH_SERIES}: no folder patches/${UVPATCH_SERIES}")
  endif()
  file(GLOB uvpatch_files RELATIVE "${uvpatch_folder}" CONFIGURE_DEPENDS
       "${uvpatch_folder}/*.patch")
  list(SORT uvpatch_files)
  if(DEFINED UVPATCH_APPLIED)
    set(uvpatch_applied ${UVPATCH_APPLIED})
  else()
    set(uvpatch_applied ${uvpatch_files})
  endif()
  string(APPEND uvpatch_text
         "#define UVPATCH_SERIES \"${UVPATCH_SERIES}\"\n"
         "#define UVPATCH_FROM \"series ${UVPATCH_SERIES}\"\n")
  foreach(file ${uvpatch_files})
    string(REGEX REPLACE "^[0-9]+-|[.]patch$" "" id "${file}")
    string(MAKE_C_IDENTIFIER "${id}" id)
    string(TOUPPER "${id}" id)
    string(APPEND uvpatch_text "#define UVPATCH_IN_SERIES_${id} 1\n")
    if(file IN_LIST uvpatch_applied)
      string(APPEND uvpatch_text "#define UVPATCH_IN_TREE_${id} 1\n")
    endif()
  endforeach()
else()
  string(APPEND uvpatch_text "#define UVPATCH_SERIES \"\"\n"
         "#define UVPATCH_FROM \"the series of this build, which it was not given (-DUVPATCH_SERIES=NAME)\"\n")
endif()
# Written only when it changes: a rewrite would rebuild every program.
set(uvpatch_old "")
if(EXISTS "${uvpatch_generated}/uvpatch_series.h")
  file(READ "${uvpatch_generated}/uvpatch_series.h" uvpatch_old)
endif()
if(NOT uvpatch_old STREQUAL uvpatch_text)
  file(WRITE "${uvpatch_generated}/uvpatch_series.h" "${uvpatch_text}")
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
  # harness.h beside the programs, the shared helpers in common/, and
  # uvpatch_series.h.
  target_include_directories(${name} PRIVATE "${UV_SOURCE_DIR}/include"
                             "${CMAKE_CURRENT_SOURCE_DIR}"
                             "${CMAKE_CURRENT_LIST_DIR}/common"
                             "${uvpatch_generated}")
  target_link_libraries(${name} PRIVATE "${UV_LIBRARY}" ${uv_link_libraries})
  if(MINGW)
    # Static runtime: the programs run under Wine with no DLLs beside them.
    target_link_options(${name} PRIVATE -static)
  endif()
endforeach()
