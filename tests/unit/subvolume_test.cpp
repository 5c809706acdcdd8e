// Per-subvolume figures and the subvolume options, without a disk.
#include <gtest/gtest.h>

#include "src/cli/cli_options.h"
#include "src/report/subvolume_report.h"
#include "src/scope/subvolume_sets.h"

namespace btrdedupe {
namespace {

TEST(FileSubvolumeSets, SetsAreInternedAndSorted) {
  FileSubvolumeSets sets;
  EXPECT_TRUE(sets.subvolumes_of(7).empty());
  // Three snapshots taken in a row alias most files the same way: few distinct sets.
  for (uint32_t f = 0; f < 1000; ++f)
    for (uint64_t snap : {260, 258, 259}) sets.add(f, snap);
  sets.add(3, 258);  // already there
  EXPECT_EQ(sets.subvolumes_of(3), (std::vector<uint64_t>{258, 259, 260}));
  EXPECT_EQ(sets.set_of(0), sets.set_of(999));
  EXPECT_EQ(sets.distinct_sets(), 4u);  // {}, {260}, {258,260}, {258,259,260}
  FileSubvolumeSets other;
  other.add(0, 300);
  sets.add_all(5, other, other.set_of(0));
  EXPECT_EQ(sets.subvolumes_of(5), (std::vector<uint64_t>{258, 259, 260, 300}));
  EXPECT_EQ(sets.subvolumes_of(4), (std::vector<uint64_t>{258, 259, 260}));
}

// Files of subvolumes 256 (A), 257 (B) and a folded read-only snapshot 258 of A.
ScanResult pool() {
  ScanResult s;
  for (uint64_t id : {256, 257, 258}) {
    btrfs::Subvolume sv;
    sv.id = id;
    sv.path = "sv" + std::to_string(id);
    sv.readonly = id == 258;
    s.subvolumes.push_back(sv);
  }
  auto file = [&](uint64_t subvol) {
    ScannedFile f;
    f.subvolume = subvol;
    f.inode = 257 + s.files.size();
    s.files.push_back(f);
    return static_cast<uint32_t>(s.files.size() - 1);
  };
  auto extent = [&](uint32_t f, uint64_t bytenr, uint64_t disk, uint64_t offset, uint64_t len) {
    FileExtent e;
    e.file = f;
    e.disk_bytenr = bytenr;
    e.disk_num_bytes = disk;
    e.extent_offset = offset;
    e.length = len;
    s.extents.push_back(e);
  };
  const uint32_t a1 = file(256), a2 = file(256), b1 = file(257), b2 = file(257);
  extent(a1, 1 << 20, 65536, 0, 65536);   // A only ...
  s.readonly_alias_subvolumes.add(a1, 258);  // ... but the snapshot holds it too
  extent(a2, 2 << 20, 8192, 0, 8192);     // A only
  extent(b1, 3 << 20, 16384, 0, 4096);    // B uses 4 KiB of a 16 KiB extent: counts whole
  extent(b2, 3 << 20, 16384, 4096, 4096); // the same extent again: counted once
  extent(b2, 4 << 20, 4096, 0, 4096);     // shared by A and B
  extent(a2, 4 << 20, 4096, 0, 4096);
  std::sort(s.extents.begin(), s.extents.end(), [](const FileExtent& x, const FileExtent& y) {
    return std::tie(x.disk_bytenr, x.extent_offset, x.file) <
           std::tie(y.disk_bytenr, y.extent_offset, y.file);
  });
  return s;
}

TEST(SubvolumeUsage, ExclusiveIsWhatNoOtherSubvolumeReferences) {
  const auto usage = subvolume_usage(pool());
  ASSERT_EQ(usage.size(), 3u);
  EXPECT_EQ(usage.at(256).referenced, 65536u + 8192 + 4096);
  EXPECT_EQ(usage.at(256).exclusive, 8192u);  // the 64 KiB extent is the snapshot's too
  EXPECT_EQ(usage.at(257).referenced, 16384u + 4096);
  EXPECT_EQ(usage.at(257).exclusive, 16384u);
  EXPECT_EQ(usage.at(258).referenced, 65536u);  // only through the folded file
  EXPECT_EQ(usage.at(258).exclusive, 0u);
}

// In a window, data an earlier window's twin references was counted there (EarlierTwin),
// and a file another window counts (Settled) is as if absent.
TEST(SubvolumeUsage, RolesLeaveOutWhatAnotherWindowCounts) {
  const auto scan = pool();
  BatchRoles roles = BatchRoles::window(scan.files.size());
  roles.set(1, BatchRole::EarlierTwin);  // a2
  auto usage = subvolume_usage(scan, roles);
  EXPECT_EQ(usage.at(256).referenced, 65536u);
  EXPECT_EQ(usage.at(256).exclusive, 0u);
  EXPECT_EQ(usage.at(257).referenced, 16384u);  // the extent shared with a2 was counted
  EXPECT_EQ(usage.at(257).exclusive, 16384u);
  roles.set(1, BatchRole::Own);
  roles.set(3, BatchRole::Settled);  // b2
  usage = subvolume_usage(scan, roles);
  EXPECT_EQ(usage.at(256).referenced, 65536u + 8192 + 4096);
  EXPECT_EQ(usage.at(256).exclusive, 8192u + 4096);  // A's alone without b2
  EXPECT_EQ(usage.at(257).referenced, 16384u);       // b1's extent, counted whole
  EXPECT_EQ(usage.at(257).exclusive, 16384u);
}

TEST(SubvolumeUsage, FiguresCarryPlannedAndDedupedBytesPerDestinationSubvolume) {
  const auto scan = pool();
  DedupePlan plan;
  DedupeRound round;
  round.source = {0, 0};
  round.length = 4096;
  round.destinations = {{2, 0}, {3, 0}};  // both in B
  plan.rounds.push_back(round);
  EXPECT_EQ(planned_bytes_by_subvolume(scan, plan), (std::map<uint64_t, uint64_t>{{257, 8192}}));
  const auto figures = subvolume_figures(scan, nullptr, planned_bytes_by_subvolume(scan, plan),
                                         {{257, 4096}}, {});
  ASSERT_EQ(figures.size(), 3u);
  EXPECT_EQ(figures[1].id, 257u);
  EXPECT_EQ(figures[1].planned_bytes, 8192u);
  EXPECT_EQ(figures[1].deduped_bytes, 4096u);
  EXPECT_EQ(figures[1].after.exclusive, figures[1].before.exclusive);  // no after scan
  EXPECT_TRUE(figures[2].readonly);
  EXPECT_EQ(figures[2].path, "sv258");
}

ParsedCli parse(std::vector<const char*> args) {
  args.insert(args.begin(), "btrdedupe");
  return parse_cli(static_cast<int>(args.size()), args.data());
}

TEST(SubvolumeCli, OptionsAndTheirErrors) {
  auto p = parse({"-dr", "--subvol", "257", "--subvol=/pool/B", "--exclude-subvol", "300",
                  "--dedupe-readonly", "/pool"});
  ASSERT_EQ(p.error, "");
  EXPECT_EQ(p.options.subvols, (std::vector<std::string>{"257", "/pool/B"}));
  EXPECT_EQ(p.options.exclude_subvols, (std::vector<std::string>{"300"}));
  EXPECT_TRUE(p.options.dedupe_readonly);
  EXPECT_FALSE(p.options.all_subvols);
  EXPECT_EQ(p.options.paths, (std::vector<std::string>{"/pool"}));
  // A --subvol PATH names the filesystem by itself; an id alone does not.
  p = parse({"-d", "--subvol", "/pool/B"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.options.paths, (std::vector<std::string>{"/pool/B"}));
  EXPECT_NE(parse({"-d", "--subvol", "257"}).error, "");
  EXPECT_NE(parse({"-d", "--subvol", "257", "--hashfile=h"}).error, "");
  EXPECT_EQ(parse({"-d", "--subvol", "/pool/B", "--hashfile=h"}).options.paths,
            (std::vector<std::string>{"/pool/B"}));
  EXPECT_EQ(parse({"--all-subvols", "/"}).error, "");
  EXPECT_TRUE(parse({"--all-subvols", "/"}).options.all_subvols);
  EXPECT_NE(parse({"--subvol="}).error, "");
  EXPECT_NE(parse({"--fdupes", "--all-subvols"}).error, "");
  // --list-subvols takes exactly one PATH.
  EXPECT_EQ(parse({"--list-subvols", "/pool"}).error, "");
  EXPECT_TRUE(parse({"--list-subvols", "/pool"}).options.list_subvols);
  EXPECT_NE(parse({"--list-subvols"}).error, "");
  EXPECT_NE(parse({"--list-subvols", "/a", "/b"}).error, "");
  EXPECT_NE(cli_help().find("--subvol"), std::string::npos);
  EXPECT_NE(cli_help().find("--list-subvols"), std::string::npos);
}

}  // namespace
}  // namespace btrdedupe
