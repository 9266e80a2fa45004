# Note [Sanitized tests]
# With EMBER_SANITIZE (e.g. "address;undefined"), the build also makes a
# sanitized copy of the library, `ember_san`, and of every test executable,
# `<test>_san` (ctest label `sanitized`), in the same build tree:
# - runtime/, eager/ and the front end's capture and executor are compiled a
#   second time, instrumented, at -O1 -g1 (what ASan's documentation advises:
#   line tables are enough for symbolized reports; -O2 -g took 2.2x as long
#   on the generated pointwise kernels);
# - ir/, passes/, codegen/ and frontend/Lowering.cpp, the layers that
#   include MLIR's headers, are compiled once and linked into both
#   libraries as they are. ASan never instrumented them (Note [MLIR under
#   AddressSanitizer] in ir/CMakeLists.txt); their code still runs in every
#   sanitized test, inside an instrumented process;
# - the tests' own code is compiled at -O0 -g1 with the sanitizers (it is
#   glue around library calls; -O1 -g1 took twice as long), and so is the
#   test support library (test/support, ember_add_test_library), whose
#   sanitized copy the sanitized tests link.
# Every translation unit is thus compiled once per configuration that needs
# it. The plain tests build at -O1 for the same reason (the library under
# test keeps the build type's flags).
#
# Note [ThreadSanitizer]
# EMBER_SANITIZE=thread is the other supported configuration (TSan cannot
# be combined with ASan). Its tests run with
#   TSAN_OPTIONS=suppressions=test/tsan.supp:halt_on_error=0:
#     second_deadlock_stack=1:report_signal_unsafe=0:
#     allocator_may_return_null=1
# set for them by ctest, in front of any TSAN_OPTIONS of the caller's own
# (the caller's settings win, e.g. log_path=... to keep one report file per
# process). A report makes the process exit with status 66 at its end, so a
# racy test fails. The suppressions are for reports that third-party code
# TSan cannot see into makes (test/tsan.supp says which and why). The MLIR
# layers (and the kernels they compile) are not instrumented either, so TSan
# sees none of their accesses: races there are not found, but make no false
# reports; their locks are still seen (pthread calls are intercepted).
if(EMBER_SANITIZE)
  if("thread" IN_LIST EMBER_SANITIZE AND
     ("address" IN_LIST EMBER_SANITIZE OR "leak" IN_LIST EMBER_SANITIZE))
    message(FATAL_ERROR "EMBER_SANITIZE: thread cannot be combined with "
                        "address or leak")
  endif()
  string(REPLACE ";" "," _san "${EMBER_SANITIZE}")
  set(EMBER_SANITIZE_FLAGS -fsanitize=${_san} -fno-omit-frame-pointer
      -fno-sanitize-recover=all -g1)
  set(EMBER_SANITIZE_LINK_FLAGS -fsanitize=${_san})
  # What the sanitized tests run with (ember_add_test).
  set(EMBER_SANITIZE_TEST_ENV "EMBER_VERIFY_PASSES=1")
  set(EMBER_SANITIZE_TEST_ENV_MODIFICATION)
  if("address" IN_LIST EMBER_SANITIZE)
    # allocator_may_return_null: the out-of-memory test asks for 1 PiB and
    # checks that ember raises (ASan would abort instead).
    list(APPEND EMBER_SANITIZE_TEST_ENV
         "ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1")
  endif()
  if("undefined" IN_LIST EMBER_SANITIZE)
    list(APPEND EMBER_SANITIZE_TEST_ENV "UBSAN_OPTIONS=print_stacktrace=1")
  endif()
  if("thread" IN_LIST EMBER_SANITIZE)
    # Prepended: flags given later in TSAN_OPTIONS (the caller's) win.
    list(APPEND EMBER_SANITIZE_TEST_ENV_MODIFICATION
         "TSAN_OPTIONS=string_prepend:suppressions=${CMAKE_SOURCE_DIR}/test/tsan.supp:halt_on_error=0:second_deadlock_stack=1:report_signal_unsafe=0:allocator_may_return_null=1:")
  endif()
endif()

# _ember_copy_properties(FROM TO PROP...): the sanitized copy of a target
# gets the plain target's settings.
function(_ember_copy_properties from to)
  foreach(_prop ${ARGN})
    get_target_property(_v ${from} ${_prop})
    if(_v)
      set_property(TARGET ${to} PROPERTY ${_prop} ${_v})
    endif()
  endforeach()
endfunction()

# ember_sanitized_objects(<object library>): <target>_san, the same sources
# and settings, instrumented.
function(ember_sanitized_objects target)
  if(NOT EMBER_SANITIZE)
    return()
  endif()
  get_target_property(_dir ${target} SOURCE_DIR)
  get_target_property(_sources ${target} SOURCES)
  set(_abs)
  foreach(_s ${_sources})
    if(IS_ABSOLUTE ${_s})
      list(APPEND _abs ${_s})
    else()
      list(APPEND _abs ${_dir}/${_s})
    endif()
  endforeach()
  add_library(${target}_san OBJECT ${_abs})
  _ember_copy_properties(${target} ${target}_san INCLUDE_DIRECTORIES
    COMPILE_DEFINITIONS COMPILE_OPTIONS LINK_LIBRARIES)
  get_target_property(_deps ${target} MANUALLY_ADDED_DEPENDENCIES)
  if(_deps)
    add_dependencies(${target}_san ${_deps})
  endif()
  target_compile_options(${target}_san PRIVATE ${EMBER_SANITIZE_FLAGS} -O1)
endfunction()

# ember_sanitized_library(ember): ember_san, the shared library of the
# sanitized layers and the plain MLIR ones.
function(ember_sanitized_library target)
  if(NOT EMBER_SANITIZE)
    return()
  endif()
  add_library(${target}_san SHARED
    $<TARGET_OBJECTS:ember_runtime_san> $<TARGET_OBJECTS:ember_eager_san>
    $<TARGET_OBJECTS:ember_frontend_san>
    $<TARGET_OBJECTS:ember_ir> $<TARGET_OBJECTS:ember_frontend_mlir>
    $<TARGET_OBJECTS:ember_passes> $<TARGET_OBJECTS:ember_codegen>)
  _ember_copy_properties(${target} ${target}_san LINK_LIBRARIES LINK_OPTIONS
    INTERFACE_LINK_LIBRARIES INTERFACE_INCLUDE_DIRECTORIES)
  target_link_options(${target}_san PRIVATE ${EMBER_SANITIZE_LINK_FLAGS})
  target_link_options(${target}_san INTERFACE ${EMBER_SANITIZE_LINK_FLAGS})
endfunction()

# ember_add_test(<name> <source> [LINK <libs>...]): a GoogleTest executable,
# its tests registered with ctest; with EMBER_SANITIZE also <name>_san
# (label `sanitized`). The properties that `ember_test_settings` sets later
# apply to both.
function(ember_add_test name src)
  cmake_parse_arguments(_t "" "" "LINK" ${ARGN})
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE ember GTest::gtest GTest::gtest_main
                        ${_t_LINK})
  target_compile_options(${name} PRIVATE -O1)
  # EMBER_VERIFY_PASSES: the tests verify the IR after every compiler pass
  # (Note [Verifying once] in frontend/Lowering.cpp).
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "EMBER_VERIFY_PASSES=1")
  set_property(GLOBAL APPEND PROPERTY EMBER_PLAIN_TARGETS ${name})
  if(NOT EMBER_SANITIZE)
    return()
  endif()
  add_executable(${name}_san ${src})
  # A test library (ember_add_test_library) links as its sanitized copy.
  set(_san_link)
  foreach(_l ${_t_LINK})
    if(TARGET ${_l}_san)
      list(APPEND _san_link ${_l}_san)
    else()
      list(APPEND _san_link ${_l})
    endif()
  endforeach()
  target_link_libraries(${name}_san PRIVATE ember_san GTest::gtest
                        GTest::gtest_main ${_san_link})
  target_compile_options(${name}_san PRIVATE ${EMBER_SANITIZE_FLAGS} -O0)
  gtest_discover_tests(${name}_san DISCOVERY_TIMEOUT 60 TEST_SUFFIX " (san)"
    TEST_LIST ${name}_san_TESTS PROPERTIES LABELS sanitized)
  # gtest_discover_tests passes every element of a list-valued property as
  # an argument of its own (ENVIRONMENT "A=1;B=2" set A=1 and a property
  # named B=2), so the environment is set by a script that ctest reads
  # after the discovered tests.
  set(_env ${CMAKE_CURRENT_BINARY_DIR}/${name}_san_environment.cmake)
  file(WRITE ${_env} "if(DEFINED ${name}_san_TESTS)
  set_tests_properties(\${${name}_san_TESTS} PROPERTIES
    ENVIRONMENT [==[${EMBER_SANITIZE_TEST_ENV}]==]
    ENVIRONMENT_MODIFICATION [==[${EMBER_SANITIZE_TEST_ENV_MODIFICATION}]==])
endif()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_env})
  set_property(GLOBAL APPEND PROPERTY EMBER_SANITIZED_TARGETS ${name}_san)
endfunction()

# ember_add_test_library(<name> <sources>...): a static library of test
# support code, compiled as the tests are; with EMBER_SANITIZE also
# <name>_san, instrumented and linked against ember_san. Tests link it with
# `ember_add_test(... LINK <name>)`, their sanitized copies get <name>_san.
function(ember_add_test_library name)
  add_library(${name} STATIC ${ARGN})
  target_link_libraries(${name} PUBLIC ember GTest::gtest)
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
                             ${CMAKE_SOURCE_DIR}/test/unit)
  target_compile_options(${name} PRIVATE -O1)
  if(NOT EMBER_SANITIZE)
    return()
  endif()
  add_library(${name}_san STATIC ${ARGN})
  target_link_libraries(${name}_san PUBLIC ember_san GTest::gtest)
  target_include_directories(${name}_san PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
                             ${CMAKE_SOURCE_DIR}/test/unit)
  target_compile_options(${name}_san PRIVATE ${EMBER_SANITIZE_FLAGS} -O0)
endfunction()

# ember_test_settings(<name> <keyword> <args>...): target_<keyword>(<name>
# PRIVATE <args>) on a test and its sanitized copy.
function(ember_test_settings name kind)
  foreach(_t ${name} ${name}_san)
    if(TARGET ${_t})
      cmake_language(CALL target_${kind} ${_t} PRIVATE ${ARGN})
    endif()
  endforeach()
endfunction()
