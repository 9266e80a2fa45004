# `cmake --install` gives a package: find_package(ember) + ember::ember.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ember EXPORT emberTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(layer runtime eager)
  install(DIRECTORY ${layer} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember
          FILES_MATCHING PATTERN "*.h")
endforeach()
# The compiler's public header (the rest of frontend/ and ir/ is internal).
install(FILES frontend/Compile.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember/frontend)
install(DIRECTORY ${EMBER_GEN_DIR}/eager
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember
        FILES_MATCHING PATTERN "*.h" PATTERN "*.inc")
install(EXPORT emberTargets NAMESPACE ember::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
configure_package_config_file(cmake/emberConfig.cmake.in
  ${CMAKE_BINARY_DIR}/emberConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/emberConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/emberConfig.cmake
              ${CMAKE_BINARY_DIR}/emberConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
