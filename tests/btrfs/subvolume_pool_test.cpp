// Per-subvolume work on a backup pool (fixtures/build-layout backup-pool): a default run
// dedupes B's latest backup against A's snapshots, reads at most the pool once and never
// touches a read-only snapshot; btrfs send -p still works; --subvol does exactly its
// subvolumes; --dedupe-readonly dedupes inside snapshots and what that does to send; a new
// snapshot is picked up incrementally by a hashfile run; the per-subvolume report.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/btrfs_image.h"
#include "support/shell.h"

namespace btrdedupe::test {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

const char* const kSnapshots[] = {"A.1", "A.2", "A.3", "B.1", "B.2"};

class SubvolumePool : public BtrfsTest {
 protected:
  void SetUp() override {
    BtrfsTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    build_layout("backup-pool", "pool");
  }

  std::string q(const std::string& rel) { return shell_quote(path(rel)); }

  CommandResult btrdedupe(const std::string& args) {
    return run_command(std::string(BTRDEDUPE_BINARY) + " " + args);
  }
  // The JSON report of a run (stdout only); the exit code in *code.
  nlohmann::json btrdedupe_json(const std::string& args, int* code) {
    const std::string out = fs().image_file() + ".json", err = fs().image_file() + ".err";
    const auto r = run_command(std::string(BTRDEDUPE_BINARY) + " --json " + args + " >" +
                               shell_quote(out) + " 2>" + shell_quote(err));
    *code = r.exit_code;
    const std::string text = read_file(out), errors = read_file(err);
    run_command("rm -f " + shell_quote(out) + " " + shell_quote(err));
    EXPECT_EQ(errors, "") << args;
    return nlohmann::json::parse(text);
  }

  // `btrfs subvolume show`'s Generation: raised by any change to the subvolume's tree, once
  // committed (hence the sync). Reading a writable subvolume's files or directories changes
  // it too (atime, under the default relatime): tests read those before taking generations.
  uint64_t generation(const std::string& rel) {
    static const std::regex line(R"(\n\s*Generation:\s*(\d+))");
    const std::string out = sh("sync -f " + q("") + " && btrfs subvolume show " + q(rel));
    std::smatch m;
    EXPECT_TRUE(std::regex_search(out, m, line)) << out;
    return m.empty() ? 0 : std::stoull(m[1]);
  }
  std::map<std::string, uint64_t> snapshot_generations() {
    std::map<std::string, uint64_t> g;
    for (const char* s : kSnapshots) g[s] = generation(std::string("pool/snapshots/") + s);
    return g;
  }

  // Physical start of each extent of a file (filefrag -v), to tell what shares what.
  std::vector<uint64_t> physical(const std::string& rel) {
    static const std::regex line(R"(^\s*\d+:\s*\d+\.\.\s*\d+:\s*(\d+)\.\.)");
    std::vector<uint64_t> out;
    std::istringstream in(sh("filefrag -v -b4096 " + q(rel)));
    std::smatch m;
    for (std::string text; std::getline(in, text);)
      if (std::regex_search(text, m, line)) out.push_back(std::stoull(m[1]));
    return out;
  }

  // `btrfs filesystem df`: used bytes of Data, Metadata and System.
  std::map<std::string, uint64_t> df() {
    static const std::regex line(R"(^(Data|Metadata|System), [^:]*: total=\d+, used=(\d+))");
    std::map<std::string, uint64_t> out;
    std::istringstream in(sh("btrfs filesystem df -b " + q("")));
    std::smatch m;
    for (std::string text; std::getline(in, text);)
      if (std::regex_search(text, m, line)) out[m[1]] += std::stoull(m[2]);
    return out;
  }

  // Bytes read from the loop device so far (/sys/block/loopN/stat, sectors read).
  uint64_t device_bytes_read() {
    const std::string dev = fs().device();
    std::istringstream in(read_file("/sys/block/" + dev.substr(dev.rfind('/') + 1) + "/stat"));
    uint64_t reads = 0, merged = 0, sectors = 0;
    in >> reads >> merged >> sectors;
    return sectors * 512;
  }

  // Nothing of this filesystem left in memory: a remount, then every cache dropped.
  void cold_caches() {
    std::string why;
    ASSERT_TRUE(fs().remount(&why)) << why;
    sh("sync && echo 3 > /proc/sys/vm/drop_caches");
  }

  // sha256 and mtime of every regular file below rel.
  std::string state(const std::string& rel) {
    return sh("cd " + q(rel) + " && find . -type f -printf '%p %T@\\n' | sort" +
              " && find . -type f -print0 | sort -z | xargs -0 -r sha256sum");
  }

  // Bytes of `btrfs send [-p parent] child`, and the stream received into recv_dir.
  uint64_t send_receive(const std::string& parent, const std::string& child,
                        const std::string& recv_dir) {
    const std::string stream = fs().image_file() + ".stream";
    sh("btrfs send -q " + (parent.empty() ? std::string() : "-p " + q(parent) + " ") + q(child) +
       " > " + shell_quote(stream));
    const uint64_t bytes = std::stoull(sh("stat -c %s " + shell_quote(stream)));
    sh("mkdir -p " + q(recv_dir) + " && btrfs receive -q " + q(recv_dir) + " < " +
       shell_quote(stream) + " && rm " + shell_quote(stream));
    return bytes;
  }

  const nlohmann::json* subvolume(const nlohmann::json& report, const std::string& rel_path) {
    for (const auto& s : report["filesystems"][0]["per_subvolume"])
      if (s["path"] == rel_path) return &s;
    ADD_FAILURE() << "no per_subvolume entry for " << rel_path;
    return nullptr;
  }

  void validate_schema(const nlohmann::json& report) {
    const std::string schema =
        std::string(BTRDEDUPE_FIXTURES_DIR) + "/../docs/json-report.schema.json";
    const std::string doc = fs().image_file() + ".report.json";
    {
      std::ofstream f(doc);
      f << report.dump();
    }
    const auto v = run_command(
        "python3 -c 'import json,sys,jsonschema; s=json.load(open(sys.argv[1]));"
        " jsonschema.Draft202012Validator(s).validate(json.load(open(sys.argv[2])));"
        " print(\"valid\")' " + shell_quote(schema) + " " + shell_quote(doc));
    run_command("rm -f " + shell_quote(doc));
    EXPECT_EQ(v.output, "valid\n");
  }
};

// Which files an inotify watch saw opened (directories opened are not files opened).
class OpenWatch {
 public:
  explicit OpenWatch(const std::vector<std::string>& dirs) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    EXPECT_GE(fd_, 0);
    for (const auto& d : dirs) {
      const int wd = ::inotify_add_watch(fd_, d.c_str(), IN_OPEN);
      EXPECT_GE(wd, 0) << d;
      dirs_[wd] = d;
    }
  }
  ~OpenWatch() { ::close(fd_); }
  std::vector<std::string> files_opened() {
    std::vector<std::string> out;
    alignas(struct inotify_event) char buf[65536];
    for (ssize_t n; (n = ::read(fd_, buf, sizeof buf)) > 0;) {
      for (char* p = buf; p < buf + n;) {
        const auto* e = reinterpret_cast<const struct inotify_event*>(p);
        if ((e->mask & IN_OPEN) && !(e->mask & IN_ISDIR) && e->len)
          out.push_back(dirs_[e->wd] + "/" + e->name);
        if (e->mask & IN_Q_OVERFLOW) out.push_back("(inotify queue overflow)");
        p += sizeof(struct inotify_event) + e->len;
      }
    }
    return out;
  }

 private:
  int fd_ = -1;
  std::map<int, std::string> dirs_;
};

TEST_F(SubvolumePool, DefaultRunDedupesTheLatestBackupAgainstSnapshotsReadingThePoolOnce) {
  const auto generations = snapshot_generations();
  const auto before = state("pool/snapshots");
  const auto used = df();
  cold_caches();
  const uint64_t read_before = device_bytes_read();
  int code = -1;
  const auto report = btrdedupe_json("-dr " + q("pool"), &code);
  const uint64_t read = device_bytes_read() - read_before;
  EXPECT_EQ(code, 0) << report.dump(2);
  validate_schema(report);

  // Read from the device: at most the pool's data and metadata, once (with 5% to spare).
  const uint64_t pool = used.at("Data") + used.at("Metadata") + used.at("System");
  std::printf("[pool] read %llu bytes from the device during the run; pool: data %llu + "
              "metadata %llu + system %llu = %llu (%.3fx)\n",
              static_cast<unsigned long long>(read),
              static_cast<unsigned long long>(used.at("Data")),
              static_cast<unsigned long long>(used.at("Metadata")),
              static_cast<unsigned long long>(used.at("System")),
              static_cast<unsigned long long>(pool), static_cast<double>(read) / static_cast<double>(pool));
  EXPECT_LE(read, pool + pool / 20);
  EXPECT_GT(read, 0u);

  // No read-only snapshot was modified.
  EXPECT_EQ(snapshot_generations(), generations);
  EXPECT_EQ(state("pool/snapshots"), before);

  // B's latest backup now shares A's storage: A's new photo, and the database as A.3 had it.
  EXPECT_EQ(physical("pool/B/home/photos/img-9.jpg"), physical("pool/A/home/photos/img-9.jpg"));
  EXPECT_EQ(physical("pool/B/var/db/data.db"), physical("pool/snapshots/A.3/var/db/data.db"));
  EXPECT_EQ(physical("pool/B/tmp/note-1.bak"), physical("pool/B/b-notes/note-1"));
  // B's files that B's own snapshots hold were left alone: sharing them would free nothing.
  EXPECT_NE(physical("pool/B/home/photos/img-1.jpg"), physical("pool/A/home/photos/img-1.jpg"));

  // Per subvolume: what only B held went from its latest backup (3 MiB + 64 KiB) and its own
  // new file (512 KiB) to that file alone. The database and the note were deduped into B
  // (their sources are held by snapshots); img-9 into B or into A (two equal candidates:
  // the less fragmented copy is kept, and writeback decides how many extents each has).
  const auto* b = subvolume(report, "pool/B");
  const auto* a = subvolume(report, "pool/A");
  ASSERT_NE(b, nullptr);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)["deduped_bytes"].get<uint64_t>() + (*b)["deduped_bytes"].get<uint64_t>(),
            report["totals"]["bytes_deduped"].get<uint64_t>());
  EXPECT_GE((*b)["deduped_bytes"].get<uint64_t>(), 2 * kMiB + 64 * kKiB);
  EXPECT_GE((*a)["deduped_bytes"].get<uint64_t>() + (*b)["deduped_bytes"].get<uint64_t>(),
            3 * kMiB + 64 * kKiB);
  EXPECT_EQ((*b)["exclusive_before"], 3 * kMiB + 64 * kKiB + 512 * kKiB);
  EXPECT_EQ((*b)["exclusive_after"], 512 * kKiB);
  EXPECT_EQ((*b)["readonly"], false);
  const auto* a1 = subvolume(report, "pool/snapshots/A.1");
  ASSERT_NE(a1, nullptr);
  EXPECT_EQ((*a1)["readonly"], true);
  EXPECT_EQ((*a1)["snapshot_of"], "pool/A");
  EXPECT_EQ((*a1)["deduped_bytes"], 0);
  // As `btrfs filesystem du` counts them (its Exclusive column), for every subvolume.
  for (const auto& s : report["filesystems"][0]["per_subvolume"]) {
    if (s["id"] == 5) continue;
    const std::string du = sh("btrfs filesystem du -s --raw " + q(s["path"].get<std::string>()));
    std::istringstream lines(du);
    std::string header, total, exclusive;
    std::getline(lines, header);
    lines >> total >> exclusive;
    EXPECT_EQ(s["exclusive_after"].get<uint64_t>(), std::stoull(exclusive)) << s.dump() << du;
  }
}

TEST_F(SubvolumePool, IncrementalSendBetweenSnapshotsStillWorksAfterADefaultRun) {
  const auto r = btrdedupe("-dr " + q("pool"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  send_receive("", "pool/snapshots/A.2", "recv");
  send_receive("pool/snapshots/A.2", "pool/snapshots/A.3", "recv");
  send_receive("", "pool/snapshots/B.1", "recv");
  send_receive("pool/snapshots/B.1", "pool/snapshots/B.2", "recv");
  EXPECT_EQ(state("recv/A.3"), state("pool/snapshots/A.3"));
  EXPECT_EQ(state("recv/B.2"), state("pool/snapshots/B.2"));
}

TEST_F(SubvolumePool, SubvolDoesExactlyTheChosenSubvolume) {
  const auto a_state = state("pool/A");
  std::vector<std::string> dirs;
  for (const std::string& line : [&] {
         std::vector<std::string> v;
         std::istringstream in(sh("find " + q("pool/A") + " " + q("pool/snapshots") + " -type d"));
         for (std::string l; std::getline(in, l);) v.push_back(l);
         return v;
       }())
    dirs.push_back(line);
  // Everything but B: far more data than B's own.
  const std::string du = sh("btrfs filesystem du -s --raw " + q("pool/A"));
  std::istringstream du_lines(du);
  std::string header;
  uint64_t a_total = 0;
  std::getline(du_lines, header);
  du_lines >> a_total;

  cold_caches();
  const auto generations = snapshot_generations();
  const uint64_t a_generation = generation("pool/A");
  OpenWatch watch(dirs);
  const uint64_t read_before = device_bytes_read();
  int code = -1;
  // PATH names the filesystem only (here: a directory inside A).
  const auto report =
      btrdedupe_json("-d --subvol " + q("pool/B") + " " + q("pool/A/home/docs"), &code);
  const uint64_t read = device_bytes_read() - read_before;
  EXPECT_EQ(code, 0) << report.dump(2);
  const auto opened = watch.files_opened();
  std::printf("[subvol] read %llu bytes from the device; A alone holds %llu\n",
              static_cast<unsigned long long>(read), static_cast<unsigned long long>(a_total));

  EXPECT_TRUE(opened.empty()) << "opened outside B: " << opened.front();
  EXPECT_LT(read, a_total / 4);
  EXPECT_EQ(generation("pool/A"), a_generation);
  EXPECT_EQ(snapshot_generations(), generations);
  EXPECT_EQ(state("pool/A"), a_state);
  const auto& fs0 = report["filesystems"][0];
  EXPECT_EQ(fs0["scan"]["subvolumes"], 1);
  ASSERT_EQ(fs0["per_subvolume"].size(), 1u);
  EXPECT_EQ(fs0["per_subvolume"][0]["path"], "pool/B");
  EXPECT_EQ(report["options"]["subvolumes"]["include"].size(), 1u);
  // Inside B, B's duplicates were deduped (its snapshots were not scanned: nothing held them).
  EXPECT_EQ(physical("pool/B/tmp/note-1.bak"), physical("pool/B/b-notes/note-1"));
  EXPECT_NE(physical("pool/B/var/db/data.db"), physical("pool/snapshots/A.3/var/db/data.db"));
}

TEST_F(SubvolumePool, AllSubvolsFromAnyPathAndExcludeSubvol) {
  // From a directory deep inside one subvolume, every subvolume of the filesystem but one.
  auto r = btrdedupe("-r --all-subvols --exclude-subvol " + q("pool/snapshots/A.1") + " " +
                     q("pool/B/home/docs"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(": 7 subvolume(s), "), std::string::npos) << r.output;  // 8 - A.1
  EXPECT_NE(r.output.find("Per subvolume (bytes on disk; exclusive: referenced by no other "
                          "subvolume scanned):\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" pool/B: exclusive 3735552, referenced "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", -d would dedupe "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("pool/snapshots/A.1"), std::string::npos) << r.output;

  // The usual walk of PATH, pruned: B is not read, so its backup is left as it is.
  r = btrdedupe("-dr --exclude-subvol " + q("pool/B") + " " + q("pool"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("excluded by --exclude: 1 files and subvolumes"), std::string::npos)
      << r.output;
  EXPECT_NE(physical("pool/B/var/db/data.db"), physical("pool/snapshots/A.3/var/db/data.db"));

  // Words that name no subvolume.
  r = btrdedupe("-r --subvol 9999 " + q("pool"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--subvol 9999: no subvolume with id 9999"), std::string::npos) << r.output;
  r = btrdedupe("-r --subvol " + q("pool/A/home") + " " + q("pool"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("is not the top directory of a subvolume"), std::string::npos) << r.output;
  r = btrdedupe("-r --subvol " + q("pool/B") + " /proc");
  EXPECT_EQ(r.exit_code, 1) << r.output;
}

TEST_F(SubvolumePool, DedupeReadonlyDedupesInsideSnapshotsAndSendStillWorks) {
  // Before: the incremental stream B.1 -> B.2 carries what B's second backup added.
  send_receive("", "pool/snapshots/B.1", "recv1");
  const uint64_t stream_before = send_receive("pool/snapshots/B.1", "pool/snapshots/B.2", "recv1");
  const auto generations = snapshot_generations();

  // Only B.1 (the parent) is deduped, against A's copies: B.1's copies now share A.2's
  // extents, B.2's copies do not. (A, A.2 and A.3 all hold those extents: theirs are kept.)
  const std::string a_side = " --subvol " + q("pool/A") + " --subvol " + q("pool/snapshots/A.2") +
                             " --subvol " + q("pool/snapshots/A.3");
  const auto r = btrdedupe("-d --dedupe-readonly" + a_side + " --subvol " +
                           q("pool/snapshots/B.1") + " " + q("pool"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(physical("pool/snapshots/B.1/home/photos/img-1.jpg"),
            physical("pool/snapshots/A.2/home/photos/img-1.jpg"));
  // Deduping raises a snapshot's generation; its content is the same.
  const auto after = snapshot_generations();
  EXPECT_GT(after.at("B.1"), generations.at("B.1"));
  EXPECT_EQ(after.at("B.2"), generations.at("B.2"));
  EXPECT_EQ(state("pool/snapshots/B.1"), state("recv1/B.1"));

  // What the kernel does (6.18): send -p with a deduped parent neither refuses nor breaks;
  // the stream is correct, but larger: files whose extents the dedupe changed in the parent
  // and not in the child no longer share them, so their data is sent in full.
  send_receive("", "pool/snapshots/B.1", "recv2");
  const uint64_t stream_after = send_receive("pool/snapshots/B.1", "pool/snapshots/B.2", "recv2");
  EXPECT_EQ(state("recv2/B.2"), state("pool/snapshots/B.2"));
  std::printf("[send] incremental B.1 -> B.2: %llu bytes before, %llu after deduping B.1\n",
              static_cast<unsigned long long>(stream_before),
              static_cast<unsigned long long>(stream_after));
  EXPECT_GT(stream_after, stream_before + 6 * kMiB);

  // Deduping inside the receiving side's parent does not stop the next incremental receive
  // (it finds the parent by its received UUID, which dedupe leaves alone).
  const auto recv = btrdedupe("-d --dedupe-readonly" + a_side + " --subvol " + q("recv1/B.1") +
                              " " + q("pool"));
  EXPECT_EQ(recv.exit_code, 0) << recv.output;
  EXPECT_EQ(physical("recv1/B.1/home/photos/img-1.jpg"), physical("pool/A/home/photos/img-1.jpg"));
  sh("btrfs subvolume delete -c " + q("recv1/B.2"));
  send_receive("pool/snapshots/B.1", "pool/snapshots/B.2", "recv1");
  EXPECT_EQ(state("recv1/B.2"), state("pool/snapshots/B.2"));
}

TEST_F(SubvolumePool, NewSnapshotIsPickedUpIncrementallyWithoutFingerprints) {
  const std::string hashfile = fs().image_file() + ".hash";
  int code = -1;
  auto first = btrdedupe_json("-dr --hashfile=" + shell_quote(hashfile) + " " + q("pool"), &code);
  EXPECT_EQ(code, 0);
  sh("btrfs -q subvolume snapshot -r " + q("pool/A") + " " + q("pool/snapshots/A.4") +
     " && btrfs -q subvolume snapshot -r " + q("pool/B") + " " + q("pool/snapshots/B.3") +
     " && sync");
  auto second = btrdedupe_json("-dr --hashfile=" + shell_quote(hashfile) + " " + q("pool"), &code);
  EXPECT_EQ(code, 0) << second.dump(2);
  const auto& fs2 = second["filesystems"][0];
  // The new snapshots' parent directory changed, so the trees were read again ...
  EXPECT_EQ(fs2["catalog"]["unchanged"], false);
  EXPECT_EQ(fs2["scan"]["subvolumes"], first["filesystems"][0]["scan"]["subvolumes"].get<int>() + 2);
  // ... but what they hold is what A and B hold: folded, no fingerprint, nothing read.
  EXPECT_EQ(fs2["catalog"]["files_changed"], 0);
  EXPECT_EQ(fs2["fingerprints"]["extents_from_csums"], 0);
  EXPECT_EQ(fs2["fingerprints"]["bytes_read"], 0);
  EXPECT_EQ(fs2["duplicates"]["planned_bytes"], 0);
  EXPECT_GT(fs2["scan"]["passed_over"]["readonly_aliases"].get<int>(),
            first["filesystems"][0]["scan"]["passed_over"]["readonly_aliases"].get<int>());
  ASSERT_NE(subvolume(second, "pool/snapshots/A.4"), nullptr);
  // A.4 holds what A holds: nothing of it is exclusive, and A's exclusive bytes moved to shared.
  EXPECT_EQ((*subvolume(second, "pool/snapshots/A.4"))["exclusive_before"], 0);
  EXPECT_EQ((*subvolume(second, "pool/A"))["exclusive_before"], 0);
  // A diverged extent in a new snapshot is fingerprinted, and only that.
  sh("head -c 1048576 /dev/urandom > " + q("pool/A/late.bin") + " && cp --reflink=never " +
     q("pool/A/late.bin") + " " + q("pool/B/late.bin") + " && btrfs -q subvolume snapshot -r " +
     q("pool/A") + " " + q("pool/snapshots/A.5") + " && sync");
  auto third = btrdedupe_json("-dr --hashfile=" + shell_quote(hashfile) + " " + q("pool"), &code);
  EXPECT_EQ(code, 0) << third.dump(2);
  const auto& fs3 = third["filesystems"][0];
  EXPECT_EQ(fs3["catalog"]["files_changed"], 2);
  EXPECT_EQ(fs3["fingerprints"]["bytes_from_csums"], 2 * kMiB);
  EXPECT_EQ(fs3["dedupe"]["bytes_deduped"], kMiB);
  // Nothing new: nothing read at all.
  auto fourth = btrdedupe_json("-dr --hashfile=" + shell_quote(hashfile) + " " + q("pool"), &code);
  EXPECT_EQ(fourth["filesystems"][0]["catalog"]["unchanged"], true);
  run_command("rm -f " + shell_quote(hashfile) + "*");
}

TEST_F(SubvolumePool, AllSubvolsHashfileSeesANewSnapshotWhoseParentIsNotScanned) {
  // The top level (where pool/snapshots lives) is left out: a new snapshot there changes no
  // scanned subvolume's generation, yet it is a subvolume the next run must scan.
  const std::string hashfile = fs().image_file() + ".hash";
  const std::string args =
      "-dr --all-subvols --exclude-subvol 5 --hashfile=" + shell_quote(hashfile) + " " + q("pool");
  int code = -1;
  auto first = btrdedupe_json(args, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(first["filesystems"][0]["scan"]["subvolumes"], 7);
  EXPECT_EQ(btrdedupe_json(args, &code)["filesystems"][0]["catalog"]["unchanged"], true);
  sh("btrfs -q subvolume snapshot -r " + q("pool/B") + " " + q("pool/snapshots/B.3") + " && sync");
  auto second = btrdedupe_json(args, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(second["filesystems"][0]["catalog"]["unchanged"], false);
  EXPECT_EQ(second["filesystems"][0]["scan"]["subvolumes"], 8);
  EXPECT_NE(subvolume(second, "pool/snapshots/B.3"), nullptr);
  EXPECT_EQ(btrdedupe_json(args, &code)["filesystems"][0]["catalog"]["unchanged"], true);
  run_command("rm -f " + shell_quote(hashfile) + "*");
}

TEST_F(SubvolumePool, ListSubvolsShowsEachWithWhatItHolds) {
  auto r = btrdedupe("--list-subvols " + q("pool/A/home"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> rows;  // path -> line
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(" pool/");
    if (at != std::string::npos) rows[line.substr(at + 1, line.find("  (", at) - at - 1)] = line;
  }
  ASSERT_EQ(rows.size(), 7u) << r.output;
  EXPECT_NE(rows["pool/snapshots/B.2"].find(" ro "), std::string::npos) << r.output;
  EXPECT_NE(rows["pool/snapshots/B.2"].find("(snapshot of pool/B)"), std::string::npos) << r.output;
  EXPECT_EQ(rows["pool/A"].find(" ro "), std::string::npos) << r.output;
  // Generations as btrfs shows them; exclusive bytes as `btrfs filesystem du` counts them
  // (after: du reads directories, which changes a writable subvolume's atimes).
  for (const auto& [p, line] : rows) {
    std::istringstream fields(line);
    std::string id, gen;
    fields >> id >> gen;
    EXPECT_EQ(std::stoull(gen), generation(p)) << line;
  }
  for (const auto& [p, line] : rows) {
    std::istringstream du(sh("btrfs filesystem du -s --raw " + q(p)));
    std::string header, total, exclusive;
    std::getline(du, header);
    du >> total >> exclusive;
    std::istringstream fields(line);
    std::string id, gen, ro, excl;
    fields >> id >> gen >> ro >> excl;
    EXPECT_EQ(excl, exclusive) << p << ": " << line;
  }
  EXPECT_NE(r.output.find("LAST SCANNED (--hashfile)"), std::string::npos);

  // With a hashfile: when each was last scanned. (The du above read A's and B's directories:
  // their atime changes are committed first, so that B stays as the scan saw it.)
  sh("sync");
  const std::string hashfile = fs().image_file() + ".hash";
  r = btrdedupe("--list-subvols --hashfile=" + shell_quote(hashfile) + " " + q("pool"));
  EXPECT_EQ(r.exit_code, 1);  // no such hashfile: not created by a listing
  EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
  ASSERT_EQ(btrdedupe("-r --subvol " + q("pool/B") + " --hashfile=" + shell_quote(hashfile) + " " +
                      q("pool")).exit_code, 0);
  sh("touch " + q("pool/A/new-file") + " && sync");
  r = btrdedupe("--list-subvols --hashfile=" + shell_quote(hashfile) + " " + q("pool"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::istringstream again(r.output);
  for (std::string line; std::getline(again, line);) {
    if (line.size() > 6 && line.substr(line.size() - 6) == "pool/B") {
      EXPECT_NE(line.find(", current"), std::string::npos) << line;
    }
    if (line.size() > 6 && line.substr(line.size() - 6) == "pool/A") {
      EXPECT_NE(line.find(" never "), std::string::npos) << line;
    }
  }
  // And as JSON.
  const auto json = btrdedupe("--list-subvols --json " + q("pool"));
  const auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["format"], "btrdedupe-subvolumes");
  EXPECT_EQ(j["subvolumes"].size(), 8u);
  run_command("rm -f " + shell_quote(hashfile) + "*");
}

}  // namespace
}  // namespace btrdedupe::test
