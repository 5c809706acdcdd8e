# The libFuzzer targets (tools/fuzz/fuzz_<name>.cpp), one per decoder of untrusted bytes;
# read by tools/fuzz/CMakeLists.txt (to build them) and tools/fuzz/ctest.cmake (to run them).
set(BTRDEDUPE_FUZZ_TARGETS
    inode_item inode_refs inode_extrefs file_extent root_item extent_item csum_item
    catalog fdupes cli)
