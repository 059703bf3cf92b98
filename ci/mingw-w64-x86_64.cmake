# CMake toolchain file: cross-compile for 64-bit Windows with mingw-w64.
#
#   cmake -G Ninja -S SRC -B BUILD \
#     -DCMAKE_TOOLCHAIN_FILE=ci/mingw-w64-x86_64.cmake
#
# The compilers default to the Debian/Ubuntu names (package
# gcc-mingw-w64-x86-64); set MINGW_TRIPLET to use another prefix.
# When Wine is found it becomes CMAKE_CROSSCOMPILING_EMULATOR, so
# try_run() and `ctest` can start the .exe files on the build host.

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

if(NOT MINGW_TRIPLET)
  set(MINGW_TRIPLET x86_64-w64-mingw32)
endif()

find_program(MINGW_CC NAMES ${MINGW_TRIPLET}-gcc)
find_program(MINGW_CXX NAMES ${MINGW_TRIPLET}-g++)
find_program(MINGW_RC NAMES ${MINGW_TRIPLET}-windres)
if(NOT MINGW_CC)
  message(FATAL_ERROR "${MINGW_TRIPLET}-gcc not found (install mingw-w64)")
endif()
set(CMAKE_C_COMPILER ${MINGW_CC})
if(MINGW_CXX)
  set(CMAKE_CXX_COMPILER ${MINGW_CXX})
endif()
if(MINGW_RC)
  set(CMAKE_RC_COMPILER ${MINGW_RC})
endif()

# Headers and libraries come from the mingw-w64 sysroot only; programs
# (code generators, test drivers) come from the build host.
set(CMAKE_FIND_ROOT_PATH /usr/${MINGW_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(MINGW_WINE NAMES wine64 wine)
if(MINGW_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${MINGW_WINE})
endif()
