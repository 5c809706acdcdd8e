# Included by the top-level CMakeLists.txt. When clang++ with libFuzzer is found, builds
# tools/fuzz (a project of its own, compiled by clang++) and adds one ctest test per target,
# fuzz.<target>, labelled `fuzz`: the target runs BTRDEDUPE_FUZZ_SECONDS over its seeds
# (fixtures/fuzz-corpus/<target>) and fails on any crash, sanitizer report or timeout.
# Not in sanitizer builds (the fuzzers carry ASan+UBSan themselves).
option(BTRDEDUPE_FUZZ "Build the libFuzzer targets and run each as a ctest test" ON)
set(BTRDEDUPE_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz.<target> test fuzzes")

if(BTRDEDUPE_FUZZ AND NOT BTRDEDUPE_SANITIZE)
  find_program(BTRDEDUPE_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
  set(fuzz_runtime "")
  if(BTRDEDUPE_CLANGXX)
    execute_process(COMMAND ${BTRDEDUPE_CLANGXX} -print-runtime-dir
                    OUTPUT_VARIABLE fuzz_runtime_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    ERROR_QUIET)
    file(GLOB fuzz_runtime "${fuzz_runtime_dir}/libclang_rt.fuzzer-*.a")
  endif()
  if(NOT fuzz_runtime)
    message(STATUS "fuzz: no clang++ with libFuzzer (clang, libclang-rt-dev): no fuzz.* tests")
  else()
    message(STATUS "fuzz: ${BTRDEDUPE_CLANGXX}, ${BTRDEDUPE_FUZZ_SECONDS} s per target")
    include(ExternalProject)
    include(${PROJECT_SOURCE_DIR}/tools/fuzz/targets.cmake)
    ExternalProject_Add(fuzzers
      SOURCE_DIR ${PROJECT_SOURCE_DIR}/tools/fuzz
      BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
      CMAKE_ARGS -DCMAKE_CXX_COMPILER=${BTRDEDUPE_CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo
      INSTALL_COMMAND ""
      BUILD_ALWAYS ON)
    foreach(t ${BTRDEDUPE_FUZZ_TARGETS})
      add_test(NAME fuzz.${t}
               COMMAND ${PROJECT_SOURCE_DIR}/tools/fuzz/run-fuzzer ${CMAKE_BINARY_DIR}/fuzz/fuzz_${t}
                       ${PROJECT_SOURCE_DIR}/fixtures/fuzz-corpus/${t}
                       ${CMAKE_BINARY_DIR}/fuzz/corpus/${t} ${BTRDEDUPE_FUZZ_SECONDS})
      math(EXPR fuzz_timeout "${BTRDEDUPE_FUZZ_SECONDS} * 3 + 60")
      set_tests_properties(fuzz.${t} PROPERTIES LABELS fuzz TIMEOUT ${fuzz_timeout})
    endforeach()
  endif()
endif()
