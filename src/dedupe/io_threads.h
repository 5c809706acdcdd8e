// How many dedupe workers to run when --io-threads is not given.
#pragma once

#include <string>

namespace btrdedupe {

// Workers for a filesystem at `path`: 4 when none of its devices is rotational (reads in
// parallel are cheap, and the kernel's compare keeps 2 cores busy), 2 when any is (two
// workers overlap one round's reads with another's compare without making the disk seek
// between many streams). 2 when the devices cannot be inspected.
unsigned default_io_threads(const std::string& path);

// Whether the block device `device` (e.g. /dev/sda2) is rotational, from sysfs;
// false when unknown.
bool device_is_rotational(const std::string& device);

}  // namespace btrdedupe
