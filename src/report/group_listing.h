// The duplicate groups a run lists (-r, -v): each member's path and its role in the plan.
// A whole run keeps them in memory until they are printed; a run read in windows spills
// them to an unnamed temporary file as each window is planned, so that the listing of a
// large tree (~100 bytes a member) does not grow the run's memory with the tree.
//
// A content with copies in several windows is planned once per window, each time with the
// same earlier copy as source (BatchRoles::source_only). Listed as planned, 4 copies of a
// tree would show 3 two-member groups per content where a whole run shows one of four.
// So each window's listings are written as one run sorted by their source, and reading
// them back merges the runs: the groups of one source range become one (an external merge
// sort: memory holds a buffer and a group per run, not the listing).
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
  // move over), or spilled as one sorted run.
  btrfs::Result<void> add(std::vector<GroupListing> listings);
  // Every listing: those kept in memory in the order added, then the spilled ones merged.
  // Spilled listings of the same source range come as one: the same length and kind, and
  // the same path and offset of their source (the first member marked source, else the
  // first member). Its members are those of each in the order added, a member listed
  // again (same path and offset) once, with the roles of its first listing. They come
  // largest length first, then by source path. A read error ends the walk and is returned.
  btrfs::Result<void> for_each(const std::function<void(const GroupListing&)>& fn) const;
  // Every listing in memory at once (small listings, tests).
  btrfs::Result<std::vector<GroupListing>> read_all() const;
  // Listings added, before any merge.
  uint64_t size() const;
  bool empty() const { return size() == 0; }

 private:
  struct CloseFile {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  struct Run {
    uint64_t offset = 0, listings = 0;
  };
  btrfs::Result<void> write_run(std::vector<GroupListing>& listings);

  std::vector<GroupListing> in_memory_;
  // Shared: a report (and its listings) is copied into the job's result.
  std::shared_ptr<std::FILE> file_;
  std::vector<Run> runs_;  // in file order
};

}  // namespace btrdedupe
