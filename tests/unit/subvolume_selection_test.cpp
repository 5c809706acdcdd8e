// Choosing subvolumes without root: the words of --subvol and --exclude-subvol, where each
// subvolume is reached through the mounts, and the selection that comes of them, on a
// made-up machine (tests/unit/made_up_mounts.h) whose mounts the kernel's rules resolve.
#include "src/scope/subvolume_selection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/made_up_mounts.h"

namespace btrdedupe::test {
namespace {

using ::testing::HasSubstr;

btrfs::Subvolume subvolume(uint64_t id, const std::string& path, bool readonly = false) {
  btrfs::Subvolume s;
  s.id = id;
  s.path = path;
  s.readonly = readonly;
  s.uuid[0] = static_cast<uint8_t>(id);
  s.uuid[1] = 0x55;
  return s;
}

// A distribution's layout: "@" mounted at /, "@home" at /home, snapshots beside them in
// the top level, which is not mounted unless a test mounts it.
class SubvolumeSelectionTest : public ::testing::Test {
 protected:
  SubvolumeSelectionTest() {
    auto snapshot = subvolume(259, "snapshots/@home.1", true);
    snapshot.parent_uuid = subvolume(257, "").uuid;
    fsid = machine.add_filesystem(1, {subvolume(5, ""), subvolume(256, "@"),
                                       subvolume(257, "@home"),
                                       subvolume(258, "@home/alice/projects", true), snapshot,
                                       subvolume(260, "@/var/lib/machines"),
                                       subvolume(261, "hidden"),
                                       subvolume(262, "@home/alice/257")});
    other = machine.add_filesystem(2, {subvolume(5, "")});
    machine.mount("/", fsid, 256);
    machine.mount("/home", fsid, 257);
    machine.mount("/mnt/my disk", other, 5);
    machine.mount_other("/tmp", "tmpfs");
  }
  void mount_top() { machine.mount("/mnt/top", fsid, 5); }
  std::map<uint64_t, std::string> reachable(const std::string& fs_path,
                                            const std::set<uint64_t>* only = nullptr) {
    auto all = machine.subvolumes(fs_path);
    EXPECT_TRUE(all);
    auto roots = reachable_subvolumes(fs_path, *all, machine, only);
    EXPECT_TRUE(roots) << roots.error().message();
    std::map<uint64_t, std::string> out;
    for (const auto& r : *roots) out[r.id] = r.path;
    return out;
  }
  btrfs::Result<ResolvedSelection> resolve(const SubvolumeSelection& s,
                                           const std::string& fs_path = "/home") {
    return resolve_selection(fs_path, s, machine);
  }
  static std::vector<uint64_t> ids(const std::vector<SubvolumeRoot>& roots) {
    std::vector<uint64_t> out;
    for (const auto& r : roots) out.push_back(r.id);
    return out;
  }

  MadeUpMounts machine;
  std::string fsid, other;
};

TEST_F(SubvolumeSelectionTest, NumbersAreIdsOfThisFilesystem) {
  const auto all = *machine.subvolumes("/");
  EXPECT_EQ(*resolve_subvolume_word("257", all, fsid, machine), 257u);
  EXPECT_EQ(*resolve_subvolume_word("5", all, fsid, machine), 5u);
  const auto unknown = resolve_subvolume_word("999", all, fsid, machine);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ENOENT);
  EXPECT_EQ(unknown.error().context, "no subvolume with id 999 on this filesystem");
  EXPECT_TRUE(machine.proved.empty());  // an id opens nothing
}

TEST_F(SubvolumeSelectionTest, OtherWordsArePathsToASubvolumesTopDirectory) {
  const auto all = *machine.subvolumes("/");
  EXPECT_EQ(*resolve_subvolume_word("/home", all, fsid, machine), 257u);
  EXPECT_EQ(*resolve_subvolume_word("/home/alice/projects/", all, fsid, machine), 258u);
  machine.cwd = "/home/alice";
  EXPECT_EQ(*resolve_subvolume_word("./257", all, fsid, machine), 262u);  // a directory "257"
  EXPECT_EQ(*resolve_subvolume_word("projects", all, fsid, machine), 258u);
  // 21 digits are no id: a path, here of no subvolume's top.
  const auto long_number = resolve_subvolume_word("123456789012345678901", all, fsid, machine);
  ASSERT_FALSE(long_number);
  EXPECT_EQ(long_number.error().code, EINVAL);

  const auto inside = resolve_subvolume_word("/home/alice", all, fsid, machine);
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().context, "/home/alice is not the top directory of a subvolume");
  const auto elsewhere = resolve_subvolume_word("/mnt/my disk", all, fsid, machine);
  ASSERT_FALSE(elsewhere);
  EXPECT_EQ(elsewhere.error().code, EXDEV);
  EXPECT_EQ(elsewhere.error().context, "/mnt/my disk is on another filesystem than the PATH given");
  const auto not_btrfs = resolve_subvolume_word("/tmp/x", all, fsid, machine);
  ASSERT_FALSE(not_btrfs);
  EXPECT_EQ(not_btrfs.error().context, "/tmp/x is on tmpfs, not btrfs");
}

// Each subvolume through the first mount that shows it, those holding the PATH first;
// nested subvolumes below a mount are reached inside it.
TEST_F(SubvolumeSelectionTest, SubvolumesAreReachedThroughTheMountsThatShowThem) {
  const std::map<uint64_t, std::string> from_home{{256, "/"},
                                                  {257, "/home"},
                                                  {258, "/home/alice/projects"},
                                                  {260, "/var/lib/machines"},
                                                  {262, "/home/alice/257"}};
  EXPECT_EQ(reachable("/home/alice"), from_home);  // no mount shows the top level's own

  mount_top();
  auto with_top = from_home;
  with_top[5] = "/mnt/top";
  with_top[259] = "/mnt/top/snapshots/@home.1";
  with_top[261] = "/mnt/top/hidden";
  EXPECT_EQ(reachable("/home/alice"), with_top);

  // From the top level's mount, everything through it.
  const std::map<uint64_t, std::string> from_top{{5, "/mnt/top"},
                                                 {256, "/mnt/top/@"},
                                                 {257, "/mnt/top/@home"},
                                                 {258, "/mnt/top/@home/alice/projects"},
                                                 {259, "/mnt/top/snapshots/@home.1"},
                                                 {260, "/mnt/top/@/var/lib/machines"},
                                                 {261, "/mnt/top/hidden"},
                                                 {262, "/mnt/top/@home/alice/257"}};
  EXPECT_EQ(reachable("/mnt/top/snapshots"), from_top);
  // Through a symlink to it, the same: the PATH is taken as it resolves.
  machine.symlinks["/top"] = "/mnt/top";
  EXPECT_EQ(reachable("/top/snapshots"), from_top);

  // The other filesystem's mount shows only its own.
  EXPECT_EQ(reachable("/mnt/my disk"), (std::map<uint64_t, std::string>{{5, "/mnt/my disk"}}));
}

TEST_F(SubvolumeSelectionTest, AMountOverASubvolumeHidesItThere) {
  machine.mount("/home/alice/projects", other, 5);
  auto reached = reachable("/home");
  EXPECT_EQ(reached.count(258), 0u);
  mount_top();
  reached = reachable("/home");
  EXPECT_EQ(reached[258], "/mnt/top/@home/alice/projects");
  EXPECT_EQ(reached[257], "/home");
}

// A bind mount of a directory inside a subvolume is no subvolume's top: not a way in. One
// of a subvolume's top is another mount of it.
TEST_F(SubvolumeSelectionTest, BindMountsOfDirectoriesAreNoWayIn) {
  machine.mount("/srv/alice", fsid, 257, "alice");
  auto reached = reachable("/srv/alice");
  EXPECT_EQ(reached[258], "/home/alice/projects");
  EXPECT_EQ(reached[257], "/home");
  machine.mount("/export/home", fsid, 257);
  reached = reachable("/export/home/alice");
  EXPECT_EQ(reached[257], "/export/home");
  EXPECT_EQ(reached[258], "/export/home/alice/projects");
  EXPECT_EQ(reached[256], "/");
}

// Mount points as mountinfo escapes them (\040 for a space, \011, \012, \134).
TEST_F(SubvolumeSelectionTest, EscapedMountPointsAreReadBack) {
  const std::string odd = "/mnt/a b\tc\\d\ne";
  machine.mount(odd, fsid, 5);
  EXPECT_THAT(machine.mount_table(), HasSubstr("/mnt/a\\040b\\011c\\134d\\012e"));
  const auto reached = reachable(odd);
  EXPECT_EQ(reached.at(5), odd);
  EXPECT_EQ(reached.at(261), odd + "/hidden");
  EXPECT_NE(std::find(machine.proved.begin(), machine.proved.end(), odd), machine.proved.end());
}

TEST_F(SubvolumeSelectionTest, OnlyTheAskedSubvolumesAreLookedFor) {
  mount_top();
  const std::set<uint64_t> only{258};
  EXPECT_EQ(reachable("/home", &only),
            (std::map<uint64_t, std::string>{{258, "/home/alice/projects"}}));
  // Mount points, and the one subvolume's place: nothing else was opened.
  for (const auto& path : machine.proved)
    EXPECT_TRUE(path == "/" || path == "/home" || path == "/mnt/top" || path == "/mnt/my disk" ||
                path == "/tmp" || path == "/home/alice/projects")
        << path;
}

TEST_F(SubvolumeSelectionTest, AFilesystemThatCannotBeReadIsAnError) {
  const auto all = *machine.subvolumes("/");
  const auto roots = reachable_subvolumes("/tmp", all, machine);
  ASSERT_FALSE(roots);
  EXPECT_EQ(roots.error().context, "/tmp is on tmpfs, not btrfs");
  machine.list_error = "listing subvolumes needs CAP_SYS_ADMIN";
  const auto r = resolve({{"257"}, {}, false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EPERM);
}

// Without --subvol or --all-subvols only the exclusions are resolved: the walk prunes them.
TEST_F(SubvolumeSelectionTest, ExclusionsAloneLeaveTheWalkToThePaths) {
  const auto r = resolve({{}, {"/home", "259"}, false});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->excluded, (std::set<uint64_t>{257, 259}));
  EXPECT_TRUE(r->roots.empty());
  EXPECT_EQ(r->all.size(), 8u);
  EXPECT_TRUE(machine.proved == std::vector<std::string>{"/home"});
  const auto bad = resolve({{}, {"999"}, false});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ENOENT);
  EXPECT_THAT(bad.error().context, HasSubstr("--exclude-subvol 999: no subvolume with id 999"));
}

// Writable subvolumes first, each group by id; the named ones kept in the order given.
TEST_F(SubvolumeSelectionTest, SubvolsAreScannedWritableFirst) {
  const auto r = resolve({{"258", "/home", "260"}, {}, false});  // 258 is read-only
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->included, (std::vector<uint64_t>{258, 257, 260}));
  EXPECT_EQ(ids(r->roots), (std::vector<uint64_t>{257, 260, 258}));
  EXPECT_EQ(r->roots[2].path, "/home/alice/projects");
  EXPECT_TRUE(r->errors.empty());
  EXPECT_TRUE(r->notes.empty());
  const auto bad = resolve({{"/home/alice"}, {}, false});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().context, HasSubstr("--subvol /home/alice: /home/alice is not the top"));
}

TEST_F(SubvolumeSelectionTest, ANamedSubvolumeNoMountShowsIsAnError) {
  const auto r = resolve({{"259", "257"}, {}, false});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(ids(r->roots), (std::vector<uint64_t>{257}));
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0],
            "subvolume 259 (snapshots/@home.1) is not reachable through any mount of the "
            "filesystem (mount its parent, or the top level with -o subvolid=5)");
  EXPECT_TRUE(r->notes.empty());
}

// --all-subvols: every subvolume but the excluded; those no mount shows are left out with a
// note, except one also named with --subvol, which is an error.
TEST_F(SubvolumeSelectionTest, AllSubvolsNotesWhatNoMountShows) {
  const auto r = resolve({{"261"}, {"/home/alice/projects"}, true});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->excluded, (std::set<uint64_t>{258}));
  EXPECT_EQ(ids(r->roots), (std::vector<uint64_t>{256, 257, 260, 262}));
  ASSERT_EQ(r->notes.size(), 2u);
  EXPECT_THAT(r->notes[0], HasSubstr("subvolume 5 (<top level>) is not reachable"));
  EXPECT_THAT(r->notes[0], HasSubstr(": left out"));
  EXPECT_THAT(r->notes[1], HasSubstr("subvolume 259 (snapshots/@home.1) is not reachable"));
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_THAT(r->errors[0], HasSubstr("subvolume 261 (hidden) is not reachable"));

  mount_top();
  const auto every = resolve({{}, {}, true});
  ASSERT_TRUE(every) << every.error().message();
  EXPECT_EQ(ids(every->roots), (std::vector<uint64_t>{5, 256, 257, 260, 261, 262, 258, 259}));
  EXPECT_TRUE(every->notes.empty());
}

TEST(SubvolumeNames, TheTopLevelAndSnapshotSources) {
  const auto top = subvolume(5, "");
  auto home = subvolume(257, "@home");
  auto snap = subvolume(300, "snaps/home", true);
  snap.parent_uuid = home.uuid;
  auto orphan = subvolume(301, "snaps/gone", true);
  orphan.parent_uuid = subvolume(299, "").uuid;
  const std::vector<btrfs::Subvolume> all{top, home, snap, orphan};
  EXPECT_EQ(subvolume_display_path(top), "<top level>");
  EXPECT_EQ(subvolume_display_path(home), "@home");
  EXPECT_EQ(snapshot_source(home, all), "");
  EXPECT_EQ(snapshot_source(snap, all), "@home");
  EXPECT_EQ(snapshot_source(orphan, all), "<deleted>");
}

// The machine's own ground, as any user meets it off btrfs: each answer says what is wrong.
TEST(MachineSubvolumeGround, OffBtrfsEachAnswerSaysWhatIsWrong) {
  SubvolumeGround& machine = machine_subvolume_ground();
  const auto proc = machine.fs_info("/proc");
  ASSERT_FALSE(proc);
  EXPECT_THAT(proc.error().context, HasSubstr("/proc is on "));
  EXPECT_THAT(proc.error().context, HasSubstr(", not btrfs"));
  const auto missing = machine.fs_info("/proc/no-such-place");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);

  const auto root = machine.subvolume_root("/proc");
  ASSERT_FALSE(root);
  EXPECT_EQ(root.error().context, proc.error().context);
  const auto file = machine.subvolume_root("/proc/self/status");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code, ENOTDIR);
  EXPECT_FALSE(machine.subvolume_root("/proc/no-such-place"));
  EXPECT_FALSE(machine.subvolumes("/proc"));
  EXPECT_FALSE(machine.scan("/proc", {{5, "/proc"}}, ScanOptions{}));

  const auto roots = reachable_subvolumes("/proc", {}, machine);
  ASSERT_FALSE(roots);
  EXPECT_EQ(roots.error().context, proc.error().context);
}

TEST(MachineSubvolumeGround, TheMountTableIsThisProcesss) {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream expected;
  expected << in.rdbuf();
  ASSERT_FALSE(expected.str().empty());
  EXPECT_EQ(machine_subvolume_ground().mount_table(), expected.str());
}

TEST(MachineSubvolumeGround, RealPathsFollowSymlinks) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/subvolume-ground-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  dir = std::filesystem::canonical(dir).string();
  std::filesystem::create_directory(dir + "/real");
  std::filesystem::create_directory_symlink(dir + "/real", dir + "/link");
  SubvolumeGround& machine = machine_subvolume_ground();
  EXPECT_EQ(machine.real_path(dir + "/link"), dir + "/real");
  EXPECT_EQ(machine.real_path(dir + "/link/../link/"), dir + "/real");
  EXPECT_EQ(machine.real_path(dir + "/gone"), dir + "/gone");  // as given
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace btrdedupe::test
