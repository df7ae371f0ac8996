# SPDX-License-Identifier: Apache-2.0
# Install rules: the libraries and headers, the relocatable spmdConfig.cmake package
# (find_package(spmd CONFIG), then link spmd::runtime), spmd.pc beside it for pkg-config, and the
# LICENSE.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS spmd_runtime spmd_pmap_legacy_impl spmd_pmap_legacy spmd_compat_impl spmd_compat
        EXPORT spmdTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(SPMD_DISTRIBUTED)
  install(TARGETS spmd_run EXPORT spmdTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY runtime/include/spmd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN "*.in" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/runtime/include/spmd/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spmd)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(SPMD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
install(EXPORT spmdTargets NAMESPACE spmd:: DESTINATION ${SPMD_CMAKE_DIR})
export(EXPORT spmdTargets NAMESPACE spmd:: FILE ${PROJECT_BINARY_DIR}/spmdTargets.cmake)

# spmdConfig.cmake finds the CPU backend's BLIS with spmd's own module, kept beside it (in the
# build tree too, for find_package(spmd) from there).
if(SPMD_BACKEND_CPU)
  configure_file(cmake/FindSpmdBLIS.cmake ${PROJECT_BINARY_DIR}/FindSpmdBLIS.cmake COPYONLY)
  install(FILES cmake/FindSpmdBLIS.cmake DESTINATION ${SPMD_CMAKE_DIR})
endif()
if(SPMD_WITH_CUDA)  # the CUDA backend's NCCL, the same way
  configure_file(cmake/FindSpmdNCCL.cmake ${PROJECT_BINARY_DIR}/FindSpmdNCCL.cmake COPYONLY)
  install(FILES cmake/FindSpmdNCCL.cmake DESTINATION ${SPMD_CMAKE_DIR})
endif()
configure_package_config_file(cmake/spmdConfig.cmake.in ${PROJECT_BINARY_DIR}/spmdConfig.cmake
                              INSTALL_DESTINATION ${SPMD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spmdConfig.cmake ${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
        DESTINATION ${SPMD_CMAKE_DIR})

# spmd.pc finds the prefix from its own folder, so the package stays relocatable like the CMake
# one (cmake --install --prefix anywhere).
file(RELATIVE_PATH SPMD_PC_PREFIX_FROM_PCDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
if(SPMD_DISTRIBUTED)
  set(SPMD_PC_GLOO "-lgloo")
else()
  set(SPMD_PC_GLOO "")
endif()
# The serial BLIS by its folder, with an RPATH: the loader would otherwise follow Debian's
# libblis.so.4 alternative, which may be a threaded flavour.
if(SPMD_BACKEND_CPU)
  get_filename_component(spmd_blas_dir "${SpmdBLIS_LIBRARY}" DIRECTORY)
  set(SPMD_PC_BLAS "-L${spmd_blas_dir} -Wl,-rpath,${spmd_blas_dir} -lblis")
else()
  set(SPMD_PC_BLAS "")
endif()
if(SPMD_WITH_CUDA)
  get_filename_component(spmd_nccl_dir "${SpmdNCCL_LIBRARY}" DIRECTORY)
  set(SPMD_PC_CUDA "-L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcublas \
-lcudart -L${spmd_nccl_dir} -Wl,-rpath,${spmd_nccl_dir} -lnccl")
else()
  set(SPMD_PC_CUDA "")
endif()
configure_file(cmake/spmd.pc.in ${PROJECT_BINARY_DIR}/spmd.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spmd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
