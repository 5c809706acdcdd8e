// --list-subvols without root: a made-up filesystem (tests/unit/made_up_mounts.h) whose
// metadata scan holds extents shared between subvolumes in known ways, listed in text and
// JSON, each figure checked against what the test's own table of extents says.
#include "src/scope/subvolume_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "src/catalog/catalog.h"
#include "src/report/byte_size.h"
#include "tests/support/captured_output.h"
#include "tests/unit/made_up_mounts.h"

namespace btrdedupe::test {
namespace {

using ::testing::HasSubstr;

// One extent of the made-up scan: its size on disk and the subvolumes whose files use it.
struct MadeUpExtent {
  uint64_t bytenr, disk_bytes;
  std::vector<uint64_t> users;
};

struct Usage {
  uint64_t exclusive = 0, shared = 0;
};

class SubvolumeListTest : public ::testing::Test {
 protected:
  SubvolumeListTest() {
    add(5, "", 100);
    add(256, "home", 120);
    add(257, "snaps/home-1", 90, true, 256);
    add(258, "snaps/gone-1", 80, true, 999);  // its source is deleted
    add(259, "caf\xe9", 70);                  // not UTF-8
    fsid = machine.add_filesystem(3, all);
    machine.mount("/pool", fsid, 5);
    machine.mount_other("/tmp", "tmpfs");
    extents = {{1 << 20, 65536, {256, 257}},  // the snapshot's data, still home's
               {2 << 20, 8192, {256}},
               {3 << 20, 16384, {5}},
               {4 << 20, 4096, {5, 259, 256}},
               {5 << 20, 12288, {259}}};
    machine.scan_answer = scan_of(extents);
  }
  void add(uint64_t id, const std::string& path, uint64_t generation, bool readonly = false,
           uint64_t source = 0) {
    btrfs::Subvolume s;
    s.id = id;
    s.path = path;
    s.generation = generation;
    s.readonly = readonly;
    s.uuid[0] = static_cast<uint8_t>(id);
    s.uuid[1] = 1;
    if (source) {
      s.parent_uuid[0] = static_cast<uint8_t>(source);
      s.parent_uuid[1] = 1;
    }
    all.push_back(s);
  }
  // The scan: a file per (extent, user), each referencing the whole extent.
  ScanResult scan_of(const std::vector<MadeUpExtent>& table) const {
    ScanResult scan;
    scan.subvolumes = all;
    for (const auto& e : table)
      for (uint64_t user : e.users) {
        ScannedFile f;
        f.subvolume = user;
        f.inode = 257 + scan.files.size();
        scan.files.push_back(f);
        FileExtent x;
        x.file = static_cast<uint32_t>(scan.files.size() - 1);
        x.disk_bytenr = e.bytenr;
        x.disk_num_bytes = e.disk_bytes;
        x.length = e.disk_bytes;
        scan.extents.push_back(x);
      }
    return scan;
  }
  // What each subvolume holds, from the table: alone, or with another subvolume.
  std::map<uint64_t, Usage> expected_usage() const {
    std::map<uint64_t, Usage> out;
    for (const auto& s : all) out[s.id];
    for (const auto& e : extents) {
      const std::set<uint64_t> users(e.users.begin(), e.users.end());
      for (uint64_t u : users)
        (users.size() == 1 ? out[u].exclusive : out[u].shared) += e.disk_bytes;
    }
    return out;
  }
  int list(const SubvolumeListOptions& options, const std::string& path = "/pool") {
    std::string error;
    int code = 0;
    text = capture([&](std::FILE* out) {
      error = capture([&](std::FILE* err) {
        code = list_subvolumes_command(path, options, out, err, machine);
      });
    });
    errors = error;
    return code;
  }
  // The text row of subvolume `id`: its columns up to SHARED, and the rest.
  struct Row {
    uint64_t id = 0, generation = 0;
    std::string ro, exclusive, shared, rest;
  };
  Row row(uint64_t id) const {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      Row r;
      if (fields >> r.id >> r.generation >> r.ro >> r.exclusive >> r.shared && r.id == id) {
        std::getline(fields, r.rest);
        return r;
      }
    }
    ADD_FAILURE() << "no row for " << id << " in\n" << text;
    return {};
  }
  std::string temporary(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    if (dir.empty()) {
      dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/subvolume-list-XXXXXX";
      if (!::mkdtemp(dir.data())) ADD_FAILURE() << "mkdtemp";
    }
    return dir + "/" + name;
  }
  // A hashfile of `of_fsid` that scanned `generations`.
  std::string hashfile(const std::string& of_fsid,
                       const std::unordered_map<uint64_t, uint64_t>& generations) {
    const std::string path = temporary("catalog-" + of_fsid);
    auto catalog = Catalog::open(path);
    EXPECT_TRUE(catalog);
    EXPECT_TRUE((*catalog)->bind(of_fsid));
    EXPECT_TRUE((*catalog)->begin());
    EXPECT_TRUE((*catalog)->set_subvolume_generations(generations));
    EXPECT_TRUE((*catalog)->commit());
    return path;
  }
  ~SubvolumeListTest() override {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }

  MadeUpMounts machine;
  std::vector<btrfs::Subvolume> all;
  std::vector<MadeUpExtent> extents;
  std::string fsid, text, errors, dir;
};

TEST_F(SubvolumeListTest, TextListsEachSubvolumeWithWhatItHolds) {
  ASSERT_EQ(list({}), 0) << errors;
  EXPECT_THAT(text, HasSubstr("Subvolumes of /pool (filesystem " + fsid + "): 5;"));
  EXPECT_THAT(text, HasSubstr("LAST SCANNED (--hashfile)"));
  const auto usage = expected_usage();
  for (const auto& s : all) {
    const Row r = row(s.id);
    EXPECT_EQ(r.generation, s.generation);
    EXPECT_EQ(r.ro, s.readonly ? "ro" : "-");
    EXPECT_EQ(r.exclusive, std::to_string(usage.at(s.id).exclusive)) << s.id;
    EXPECT_EQ(r.shared, std::to_string(usage.at(s.id).shared)) << s.id;
  }
  EXPECT_THAT(row(5).rest, HasSubstr("<top level>"));
  EXPECT_THAT(row(257).rest, HasSubstr("snaps/home-1  (snapshot of home)"));
  EXPECT_THAT(row(258).rest, HasSubstr("(snapshot of <deleted>)"));
  EXPECT_THAT(row(256).rest, ::testing::Not(HasSubstr("snapshot of")));
  EXPECT_THAT(row(259).rest, ::testing::Not(HasSubstr("caf\xe9")));  // printable instead
  // Every subvolume's tree was read, writable ones first, as counts only.
  std::vector<uint64_t> order;
  for (const auto& root : machine.scanned) order.push_back(root.id);
  EXPECT_EQ(order, (std::vector<uint64_t>{5, 256, 259, 257, 258}));
  EXPECT_EQ(machine.scanned_at, "/pool");
  EXPECT_FALSE(machine.scanned_with.keep_paths);
  EXPECT_FALSE(machine.scanned_with.warm_csum_tree);
}

TEST_F(SubvolumeListTest, HumanSizes) {
  ASSERT_EQ(list({"", true, false}), 0) << errors;
  const auto usage = expected_usage();
  std::istringstream lines(text);
  std::string line;
  std::set<uint64_t> seen;
  while (std::getline(lines, line)) {
    uint64_t id = 0;
    if (!(std::istringstream(line) >> id)) continue;
    seen.insert(id);
    const auto& u = usage.at(id);
    // Columns of 12: each size right-aligned in its own.
    const auto column = [&](uint64_t bytes) {
      const std::string h = human_bytes(bytes);
      return std::string(12 - h.size(), ' ') + h;
    };
    EXPECT_THAT(line, HasSubstr(column(u.exclusive) + " " + column(u.shared) + "  ")) << line;
  }
  EXPECT_EQ(seen.size(), all.size());
  EXPECT_THAT(text, HasSubstr("64.0 KiB"));
}

TEST_F(SubvolumeListTest, JsonGivesTheSameFigures) {
  ASSERT_EQ(list({"", false, true}), 0) << errors;
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["format"], "btrdedupe-subvolumes");
  EXPECT_EQ(doc["fsid"], fsid);
  EXPECT_TRUE(doc["hashfile"].is_null());
  const auto usage = expected_usage();
  ASSERT_EQ(doc["subvolumes"].size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& j = doc["subvolumes"][i];
    const auto& s = all[i];
    EXPECT_EQ(j["id"], s.id);
    EXPECT_EQ(j["readonly"], s.readonly);
    EXPECT_EQ(j["generation"], s.generation);
    EXPECT_TRUE(j["last_scanned_generation"].is_null());
    EXPECT_EQ(j["exclusive_bytes"], usage.at(s.id).exclusive) << s.id;
    EXPECT_EQ(j["shared_bytes"], usage.at(s.id).shared) << s.id;
    EXPECT_EQ(j["referenced_bytes"], usage.at(s.id).exclusive + usage.at(s.id).shared);
  }
  EXPECT_EQ(doc["subvolumes"][0]["path"], "<top level>");
  EXPECT_TRUE(doc["subvolumes"][1]["snapshot_of"].is_null());
  EXPECT_EQ(doc["subvolumes"][2]["snapshot_of"], "home");
  EXPECT_EQ(doc["subvolumes"][3]["snapshot_of"], "<deleted>");
  EXPECT_EQ(doc["subvolumes"][4]["path_hex"], "636166e9");  // "caf\xe9"
  EXPECT_FALSE(doc["subvolumes"][1].contains("path_hex"));
}

TEST_F(SubvolumeListTest, AHashfileSaysWhenEachWasLastScanned) {
  const std::string path = hashfile(fsid, {{5, 100}, {256, 110}});
  ASSERT_EQ(list({path, false, false}), 0) << errors;
  EXPECT_THAT(row(5).rest, HasSubstr("gen 100, current"));
  EXPECT_THAT(row(256).rest, HasSubstr("gen 110, changed since"));
  EXPECT_THAT(row(257).rest, HasSubstr("never"));
  ASSERT_EQ(list({path, false, true}), 0) << errors;
  const auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["hashfile"], path);
  EXPECT_EQ(doc["subvolumes"][0]["last_scanned_generation"], 100);
  EXPECT_EQ(doc["subvolumes"][1]["last_scanned_generation"], 110);
  EXPECT_TRUE(doc["subvolumes"][2]["last_scanned_generation"].is_null());
}

TEST_F(SubvolumeListTest, AHashfileMustBeThisFilesystems) {
  const std::string missing = temporary("none");
  EXPECT_EQ(list({missing, false, false}), 1);
  EXPECT_EQ(errors, "btrdedupe: hashfile " + missing + " does not exist or is empty\n");
  EXPECT_EQ(text, "");
  std::ofstream(temporary("empty")).close();
  EXPECT_EQ(list({temporary("empty"), false, false}), 1);
  EXPECT_THAT(errors, HasSubstr("does not exist or is empty"));
  std::ofstream(temporary("junk")) << std::string(4096, 'x');
  EXPECT_EQ(list({temporary("junk"), false, false}), 1);
  EXPECT_THAT(errors, HasSubstr("btrdedupe: "));
  const std::string other = machine.add_filesystem(4, all);
  EXPECT_EQ(list({hashfile(other, {{5, 1}}), false, false}), 1);
  EXPECT_THAT(errors, HasSubstr("is of another filesystem (" + other + ")"));
}

TEST_F(SubvolumeListTest, WhatCannotBeReadEndsTheListing) {
  EXPECT_EQ(list({}, "/tmp/x"), 1);
  EXPECT_EQ(errors, "btrdedupe: /tmp/x is on tmpfs, not btrfs\n");
  machine.scan_error = "tree search";
  EXPECT_EQ(list({}), 1);
  EXPECT_THAT(errors, HasSubstr("btrdedupe: tree search"));
  machine.list_error = "listing subvolumes needs CAP_SYS_ADMIN";
  EXPECT_EQ(list({}), 1);
  EXPECT_THAT(errors, HasSubstr("btrdedupe: listing subvolumes needs CAP_SYS_ADMIN"));
  EXPECT_EQ(text, "");
}

}  // namespace
}  // namespace btrdedupe::test
