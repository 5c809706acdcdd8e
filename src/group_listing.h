// The duplicate groups a run lists (-r, -v): each member's path and its role in the plan.
// A whole run keeps them in memory until they are printed; a run read in windows spills
// them to an unnamed temporary file as each window is planned, so that the listing of a
// large tree (~100 bytes a member) does not grow the run's memory with the tree.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "btrfs/result.h"

namespace btrdedupe {

struct GroupListing {
  uint64_t length = 0;
  bool whole_file = false;
  struct Member {
    std::string path;
    uint64_t offset = 0;
    uint32_t layout = 0;
    bool source = false;       // the plan keeps this member's storage
    bool destination = false;  // the plan points this member at the source's storage
  };
  std::vector<Member> members;
};

class GroupListings {
 public:
  // From now on, listings go to an unnamed file (O_TMPFILE in $TMPDIR, else /var/tmp),
  // gone when the last copy of this object is. Listings already added stay in memory.
  btrfs::Result<void> spill_to_disk();
  btrfs::Result<void> add(GroupListing listing);
  // All of a plan's listings at once: kept in memory as given (no second array while they
  // move over), or spilled one by one.
  btrfs::Result<void> add(std::vector<GroupListing> listings);
  // Every listing, in the order added. A read error ends the walk and is returned.
  btrfs::Result<void> for_each(const std::function<void(const GroupListing&)>& fn) const;
  // Every listing in memory at once (small listings, tests).
  btrfs::Result<std::vector<GroupListing>> read_all() const;
  uint64_t size() const { return in_memory_.size() + spilled_; }
  bool empty() const { return size() == 0; }

 private:
  struct CloseFile {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::vector<GroupListing> in_memory_;
  // Shared: a report (and its listings) is copied into the job's result.
  std::shared_ptr<std::FILE> file_;
  uint64_t spilled_ = 0;
};

}  // namespace btrdedupe
