# Install rules and the relocatable spmdConfig.cmake package: find_package(spmd CONFIG) then
# link spmd::runtime.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS spmd_runtime spmd_pmap_legacy_impl spmd_pmap_legacy spmd_compat_impl spmd_compat
        EXPORT spmdTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY runtime/include/spmd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(SPMD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
install(EXPORT spmdTargets NAMESPACE spmd:: DESTINATION ${SPMD_CMAKE_DIR})
export(EXPORT spmdTargets NAMESPACE spmd:: FILE ${PROJECT_BINARY_DIR}/spmdTargets.cmake)

configure_package_config_file(cmake/spmdConfig.cmake.in ${PROJECT_BINARY_DIR}/spmdConfig.cmake
                              INSTALL_DESTINATION ${SPMD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spmdConfig.cmake ${PROJECT_BINARY_DIR}/spmdConfigVersion.cmake
        DESTINATION ${SPMD_CMAKE_DIR})
