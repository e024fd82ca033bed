# kiln_add_model: compile an ONNX model with kilnc as part of a CMake build.
#
#   kiln_add_model(<target> MODEL <file.onnx> [NAME <c-identifier>]
#                  [TARGET cpu|cuda] [OPTIONS <kilnc flags>...])
#
# Runs `kilnc MODEL -o <dir>/<NAME> --name=<NAME> --target=... OPTIONS` at
# build time (again only when the model, kilnc or the flags change) and
# makes <target> a static library of the compiled object whose include
# directory holds <NAME>.h (NAME defaults to <target>) and which links the
# Kiln runtime (Kiln::runtime, and Kiln::runtime_cuda for TARGET cuda).
# Used from an installed Kiln (find_package(Kiln)) and inside Kiln's own
# build (examples/).
function(kiln_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 KILN "" "MODEL;NAME;TARGET" "OPTIONS")
  if(NOT KILN_MODEL)
    message(FATAL_ERROR "kiln_add_model(${target}): MODEL <file.onnx> is required")
  endif()
  if(KILN_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kiln_add_model(${target}): unknown arguments ${KILN_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT KILN_NAME)
    set(KILN_NAME ${target})
  endif()
  if(NOT KILN_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "kiln_add_model(${target}): NAME '${KILN_NAME}' is not a C identifier")
  endif()
  if(NOT KILN_TARGET)
    set(KILN_TARGET cpu)
  endif()
  if(NOT KILN_TARGET MATCHES "^(cpu|cuda)$")
    message(FATAL_ERROR "kiln_add_model(${target}): TARGET must be cpu or cuda, found '${KILN_TARGET}'")
  endif()
  if(KILN_TARGET STREQUAL "cuda" AND NOT TARGET Kiln::runtime_cuda)
    message(FATAL_ERROR "kiln_add_model(${target}): TARGET cuda needs Kiln built with the CUDA toolkit")
  endif()
  get_filename_component(model "${KILN_MODEL}" ABSOLUTE)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/kiln/${target}")
  set(prefix "${dir}/${KILN_NAME}")
  file(MAKE_DIRECTORY "${dir}")
  add_custom_command(
    OUTPUT "${prefix}.h" "${prefix}.o"
    COMMAND $<TARGET_FILE:Kiln::kilnc> "${model}" -o "${prefix}" --name=${KILN_NAME}
            --target=${KILN_TARGET} ${KILN_OPTIONS}
    DEPENDS "${model}" $<TARGET_FILE:Kiln::kilnc>
    COMMENT "kilnc ${KILN_MODEL} -> ${KILN_NAME}.h, ${KILN_NAME}.o"
    VERBATIM)
  set_source_files_properties("${prefix}.o" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(${target} STATIC "${prefix}.o" "${prefix}.h")
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${target} PUBLIC "${dir}")
  if(KILN_TARGET STREQUAL "cuda")
    target_link_libraries(${target} PUBLIC Kiln::runtime_cuda)
  else()
    target_link_libraries(${target} PUBLIC Kiln::runtime m)
  endif()
endfunction()
