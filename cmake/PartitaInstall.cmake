# `cmake --install build [--prefix P]`: headers (with the generated .inc
# files), Partita's static libraries, the tools, and PartitaConfig.cmake
# (imported Partita:: targets; it finds MLIR for the consumer).
include(GNUInstallDirs)

install(DIRECTORY ${PARTITA_SOURCE_DIR}/include/partita
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.td" PATTERN "*.def"
        PATTERN "CMakeLists.txt" EXCLUDE)
install(DIRECTORY ${PARTITA_BINARY_DIR}/include/partita
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.inc" PATTERN "*.h"
        PATTERN "CMakeFiles" EXCLUDE)

# add_mlir_library installs its own archives; the plain ones are here.
install(TARGETS PartitaSharding PartitaRuntime
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS partita partita-opt partita-exec
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The plugins (partita/Runtime/Plugins/Plugin.h) and the compiler's commands
# (libpartita-cli.so) go to <prefix>/lib, where the tools in <prefix>/bin
# look for them, and find CUDA, NCCL, MPI or MLIR where they were found at
# build time.
foreach(plugin PartitaCudaPlugin PartitaMpiPlugin PartitaCli)
  if(TARGET ${plugin})
    install(TARGETS ${plugin} LIBRARY DESTINATION lib)
    set_target_properties(${plugin} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  endif()
endforeach()

set(PARTITA_CONFIG_BLAS "")
if(PARTITA_HAVE_OPENBLAS)
  set(PARTITA_CONFIG_BLAS "${PARTITA_OPENBLAS_LIBRARY}")
endif()
configure_file(${PARTITA_SOURCE_DIR}/cmake/PartitaConfig.cmake.in
               ${PARTITA_BINARY_DIR}/PartitaConfig.cmake @ONLY)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(
  ${PARTITA_BINARY_DIR}/PartitaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PARTITA_BINARY_DIR}/PartitaConfig.cmake
              ${PARTITA_BINARY_DIR}/PartitaConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/partita)

# The installed tools find MLIR/LLVM (and CUDA, MPI, OpenBLAS when linked)
# where they were found at build time: LLVM's helpers give the MLIR-based
# tools only $ORIGIN/../lib, and libMLIR.so is not under the prefix.
foreach(tool partita-opt partita-exec PartitaCli)
  if(TARGET ${tool})
    set_property(TARGET ${tool} APPEND PROPERTY INSTALL_RPATH
                 "${LLVM_LIBRARY_DIR}")
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  endif()
endforeach()
