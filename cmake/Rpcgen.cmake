# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# rpcrdma_rpcgen(<out-var> <name> [SERVER])
# Runs rpcgen on <name>.x of the current source directory into
# ${CMAKE_CURRENT_BINARY_DIR}/gen and appends the generated C files to
# <out-var>: XDR routines and client stubs, and with SERVER the dispatch
# function too.  -M: thread-safe stubs that take the result pointer (the
# form libtirpc documents); -m: the dispatch function alone (our mains
# create the transport and call svc_run themselves).  The header is
# gen/<name>.h.  Generated code is not ours to keep warning-free.
find_program(RPCGEN rpcgen)

function(rpcrdma_rpcgen out name)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${gen})
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${name}.x)
  set(outputs ${gen}/${name}.h ${gen}/${name}_xdr.c ${gen}/${name}_clnt.c)
  set(svc_cmd)
  if("SERVER" IN_LIST ARGN)
    list(APPEND outputs ${gen}/${name}_svc.c)
    set(svc_cmd COMMAND ${RPCGEN} -M -m -o ${name}_svc.c ${name}.x)
  endif()
  # rpcgen writes #include "<name>.h" relative to its input, so it runs
  # on a copy in the output directory; it refuses to overwrite its
  # earlier output, so that goes first.
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E copy ${src} ${gen}/${name}.x
    COMMAND ${CMAKE_COMMAND} -E rm -f ${name}.h ${name}_xdr.c ${name}_clnt.c ${name}_svc.c
    COMMAND ${RPCGEN} -M -h -o ${name}.h ${name}.x
    COMMAND ${RPCGEN} -M -c -o ${name}_xdr.c ${name}.x
    COMMAND ${RPCGEN} -M -l -o ${name}_clnt.c ${name}.x
    ${svc_cmd}
    WORKING_DIRECTORY ${gen}
    DEPENDS ${src}
    COMMENT "rpcgen ${name}.x")
  list(FILTER outputs INCLUDE REGEX "\\.c$")
  set_source_files_properties(${outputs} PROPERTIES COMPILE_OPTIONS
    "-Wno-unused-variable;-Wno-unused-parameter;-Wno-missing-prototypes;-Wno-strict-prototypes;-Wno-shadow;-Wno-cast-function-type")
  set(${out} ${${out}} ${outputs} PARENT_SCOPE)
endfunction()
