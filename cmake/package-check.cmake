# Run by cpack for each generator (CPACK_PROJECT_CONFIG_FILE). A .deb laid out under
# /usr/local would break Debian policy, and one moved to /usr by cpack alone would start a
# binary at the /usr/local path compiled into the systemd unit: configure with the prefix.
if(CPACK_GENERATOR STREQUAL "DEB" AND NOT CPACK_PACKAGING_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "btrdedupe: a .deb needs a build configured with -DCMAKE_INSTALL_PREFIX=/usr "
                      "(this one has ${CPACK_PACKAGING_INSTALL_PREFIX})")
endif()
