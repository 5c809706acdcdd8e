# `cpack -G DEB` in a build configured with -DCMAKE_INSTALL_PREFIX=/usr -DBTRDEDUPE_TESTS=OFF
# makes build/btrdedupe_VERSION_ARCH.deb of what `cmake --install` installs (tools/check-deb
# builds one and installs it on a clean Debian 12).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME btrdedupe)
# The version is project()'s; CPack takes it from there.
set(CPACK_PACKAGE_CONTACT "Seed 99eedec5 maintainers <maintainers@users.noreply.a-seed-99eedec5.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "btrfs-native, extent-aware deduplicator")
set(CPACK_PACKAGE_DESCRIPTION
    "btrdedupe finds duplicate data on btrfs from the filesystem's own metadata (extents,\n\
backrefs and data checksums) instead of hashing every file, and dedupes it with\n\
FIDEDUPERANGE, whose byte-for-byte compare in the kernel is the only proof of equality.\n\
Its command line follows duperemove's. Includes systemd units for scheduled runs.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# Debian's name for the file (btrdedupe_0.1.0_amd64.deb) instead of CPack's btrdedupe-0.1.0-Linux.deb.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Depends from the libraries the binary links (dpkg-shlibdeps, in dpkg-dev), so it matches
# the distribution the package is built on.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A system tool ships without debug symbols (about a third of the binary).
set(CPACK_STRIP_FILES ON)
# The package holds files at the paths this build compiled in (the unit's ExecStart names
# CMAKE_INSTALL_FULL_SBINDIR), so it is laid out under the same prefix; cmake/package-check.cmake
# refuses a DEB whose prefix is not /usr.
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/package-check.cmake)
include(CPack)
