// Files that change under a run: between scan and dedupe (every kind of change), while the
// dedupe runs (a writer thread against run_job and against the binary), and runs killed
// with SIGKILL in the middle of their dedupe. docs/reliability.md lists what each proves.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "support/planned_dedupe.h"
#include "src/dedupe/dedupe_engine.h"
#include "src/plan/dedupe_plan.h"
#include "src/match/duplicate_match.h"
#include "src/fingerprint/fingerprint.h"
#include "src/run/job.h"
#include "tests/btrfs/reliability_support.h"

namespace btrdedupe::test {
namespace {

using namespace std::chrono_literals;

class ChangesTest : public ReliabilityTest {
 protected:
  PlannedDedupe plan(const std::string& rel) { return plan_dedupe(path(rel)); }

  // `count` groups of `copies` identical files of `size` bytes each under rel/gNNN/.
  void make_groups(const std::string& rel, int count, int copies, int size) {
    sh("mkdir -p " + shell_quote(path(rel)) + " && cd " + shell_quote(path(rel)) +
       " && for g in $(seq -w 1 " + std::to_string(count) + "); do mkdir g$g && head -c " +
       std::to_string(size) + " /dev/urandom > g$g/c1 && for c in $(seq 2 " +
       std::to_string(copies) + "); do cp --reflink=never g$g/c1 g$g/c$c; done; done && sync");
  }
};

bool message_names(const DedupeStats& stats, const std::string& file) {
  for (const auto& m : stats.messages)
    if (m.find(file) != std::string::npos) return true;
  return false;
}

// Each group has its source held twice (a reflink copy makes that layout the one the plan
// keeps) and one destination, which suffers one kind of change after the scan.
TEST_F(ChangesTest, EveryKindOfChangeBetweenScanAndDedupeIsSkipped) {
  const std::vector<std::pair<std::string, std::string>> faults = {
      {"modified", "printf X | dd of=modified/dst bs=1 seek=5000 conv=notrunc status=none"},
      {"truncated", "truncate -s 4096 truncated/dst"},
      {"extended", "head -c 4096 /dev/urandom >> extended/dst"},
      {"deleted", "rm deleted/dst"},
      {"renamed", "mv renamed/dst renamed/dst-renamed"},
      {"replaced-by-directory", "rm replaced-by-directory/dst && mkdir replaced-by-directory/dst"},
      // A symlink to the source itself: never followed, never opened.
      {"replaced-by-symlink",
       "rm replaced-by-symlink/dst && ln -s src replaced-by-symlink/dst"},
      {"replaced-by-another-file",
       "rm replaced-by-another-file/dst && cp --reflink=never replaced-by-another-file/src "
       "replaced-by-another-file/dst"},
      {"source-renamed",
       "mv source-renamed/src source-renamed/src-renamed && "
       "mv source-renamed/src-ref source-renamed/src-ref-renamed"},
  };
  std::string make = "cd " + shell_quote(path("")) + " && for d in control";
  for (const auto& f : faults) make += " " + f.first;
  make += "; do mkdir $d && head -c 1048576 /dev/urandom > $d/src && "
          "cp --reflink=always $d/src $d/src-ref && cp --reflink=never $d/src $d/dst; done && sync";
  sh(make);
  auto p = plan("");
  ASSERT_EQ(p.plan.rounds.size(), faults.size() + 1);
  for (const auto& f : faults) {
    sh("cd " + shell_quote(path("")) + " && " + f.second + " && sync");
    injected();
  }
  const auto before = state();
  const auto stats = run_dedupe(p.scan, p.plan, {});
  EXPECT_EQ(stats.ranges_same, 1u);  // control/dst
  EXPECT_EQ(stats.ranges_changed, faults.size());
  EXPECT_EQ(stats.ranges_differ, 0u);
  EXPECT_EQ(stats.ranges_failed, 0u);
  EXPECT_EQ(stats.bytes_deduped, 1048576u);
  for (const auto& f : faults)
    EXPECT_TRUE(message_names(stats, "/" + f.first + "/")) << f.first << " is not reported";
  expect_unchanged(before);
  // The directory and the symlink are still what the change made them.
  struct stat st {};
  ASSERT_EQ(::lstat(path("replaced-by-directory/dst").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(::lstat(path("replaced-by-symlink/dst").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}


// Written but not yet flushed, a file has no extent item: the scan must flush first, and a
// hashfile run must let the transaction commit before it compares subvolume generations.
// (Nothing here syncs: the states are read through the page cache.)
TEST_F(ChangesTest, FilesWrittenJustBeforeTheRunAreSeen) {
  const std::string dir = shell_quote(path(""));
  sh("cd " + dir + " && head -c 1048576 /dev/urandom > a && cp --reflink=never a b");
  injected();
  const auto before = tree_state(path(""), &counts_);
  auto r = btrdedupe("-dr " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 2 * 1048576) << r.output;  // both files of the pair
  const std::string hashfile = shell_quote(fs().image_file() + ".hash");
  r = btrdedupe("-dr --hashfile=" + hashfile + " " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  sh("cd " + dir + " && cp --reflink=never a c");
  injected();
  auto before2 = before;
  before2["c"] = tree_state(path(""), &counts_).at("c");
  r = btrdedupe("-dr --hashfile=" + hashfile + " " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(net_change(r.output), 1048576) << r.output;  // c, found though made just now (a was shared already)
  expect_unchanged(before2);
  run_command("rm -f " + hashfile + "*");
}

// A writer that keeps changing files while a run dedupes them; it remembers what each file
// must hold. Rewrites in place, appends, truncations and whole rewrites, 1-3 ms apart.
class Writer {
 public:
  Writer(std::vector<std::string> files, unsigned seed) : files_(std::move(files)), rng_(seed) {
    for (const auto& f : files_) content_.push_back(read_file(f));
    touched_.assign(files_.size(), false);
  }
  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t writes() const { return writes_; }
  const std::string& expected(size_t i) const { return content_[i]; }
  bool touched(size_t i) const { return touched_[i]; }
  size_t size() const { return files_.size(); }
  const std::string& file(size_t i) const { return files_[i]; }

 private:
  void loop() {
    std::string block(4096, '\0');
    while (!stop_) {
      const size_t i = std::uniform_int_distribution<size_t>(0, files_.size() - 1)(rng_);
      for (auto& c : block) c = static_cast<char>(rng_());
      std::string& model = content_[i];
      const int fd = ::open(files_[i].c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) {
        ADD_FAILURE() << files_[i] << ": " << std::strerror(errno);
        return;
      }
      switch (rng_() % 4) {
        case 0: {  // rewrite 4 KiB in place
          const size_t at = model.size() > 4096 ? rng_() % (model.size() - 4096) : 0;
          write_at(fd, block, at);
          if (model.size() < at + block.size()) model.resize(at + block.size());
          model.replace(at, block.size(), block);
          break;
        }
        case 1:  // append
          write_at(fd, block, model.size());
          model += block;
          break;
        case 2: {  // truncate to a random shorter size
          const size_t to = model.empty() ? 0 : rng_() % model.size();
          EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(to)), 0);
          model.resize(to);
          break;
        }
        default: {  // rewrite a whole file with the content of another one
          const size_t j = std::uniform_int_distribution<size_t>(0, files_.size() - 1)(rng_);
          const std::string other = content_[j];
          EXPECT_EQ(::ftruncate(fd, 0), 0);
          write_at(fd, other, 0);
          model = other;
          break;
        }
      }
      ::close(fd);
      touched_[i] = true;
      ++writes_;
      std::this_thread::sleep_for(std::chrono::microseconds(1000 + rng_() % 2000));
    }
  }
  static void write_at(int fd, const std::string& bytes, size_t at) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                 static_cast<off_t>(at + done));
      ASSERT_GT(n, 0) << std::strerror(errno);
      done += static_cast<size_t>(n);
    }
  }

  std::vector<std::string> files_;
  std::vector<std::string> content_;
  std::vector<bool> touched_;
  std::mt19937 rng_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> writes_{0};
};

class DuringDedupeTest : public ChangesTest {
 protected:
  void SetUp() override {
    ChangesTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    // 48 groups of 3 copies of 768 KiB (108 MiB), and a writer on one copy in three.
    make_groups("t", 48, 3, 768 * 1024);
    for (int g = 1; g <= 48; ++g) {
      char name[32];
      std::snprintf(name, sizeof name, "t/g%02d/c%d", g, 1 + g % 3);
      written_.push_back(name);
    }
  }

  // The invariant with a writer: every file it wrote holds what it wrote last; every other
  // file is as it was (bytes and mtime).
  void check(const TreeState& before, const Writer& w) {
    const TreeState after = state("t");
    std::map<std::string, size_t> written;
    for (size_t i = 0; i < w.size(); ++i) written[written_[i].substr(2)] = i;
    size_t checked = 0;
    for (const auto& [rel, s] : before) {
      auto it = after.find(rel);
      ASSERT_NE(it, after.end()) << rel;
      auto wi = written.find(rel);
      if (wi != written.end() && w.touched(wi->second)) {
        EXPECT_EQ(it->second.sha256, sha256_hex(w.expected(wi->second))) << rel;
        EXPECT_EQ(it->second.size, w.expected(wi->second).size()) << rel;
      } else {
        EXPECT_EQ(it->second, s) << rel;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 144u);
    EXPECT_EQ(after.size(), before.size());
  }

  std::vector<std::string> written_;  // relative to the mount point
};

class PhaseWatch : public ProgressSink {
 public:
  void progress(const char* phase, uint64_t, uint64_t) override {
    std::lock_guard lock(mu_);
    phase_ = phase;
  }
  std::string phase() {
    std::lock_guard lock(mu_);
    return phase_;
  }

 private:
  std::mutex mu_;
  std::string phase_;
};

TEST_F(DuringDedupeTest, WriterDuringRunJobNeverLosesAWrite) {
  const auto before = state("t");
  std::vector<std::string> files;
  for (const auto& f : written_) files.push_back(path(f));
  Writer w(files, 1234);
  JobOptions o;
  o.paths = {path("t")};
  o.recursive = true;
  o.dedupe = true;
  o.io_threads = 1;
  PhaseWatch watch;
  std::atomic<uint64_t> writes_in_dedupe{0};
  std::atomic<bool> done{false};
  w.start();
  std::thread sampler([&] {
    uint64_t last = w.writes();
    while (!done) {
      std::this_thread::sleep_for(1ms);
      const uint64_t now = w.writes();
      if (watch.phase() == "dedupe") writes_in_dedupe += now - last;
      last = now;
    }
  });
  std::this_thread::sleep_for(20ms);
  const auto report = run_job(o, &watch);
  done = true;
  sampler.join();
  w.stop();
  injected(w.writes());
  ASSERT_EQ(report.filesystems.size(), 1u);
  const auto& d = report.filesystems[0].dedupe;
  EXPECT_TRUE(report.filesystems[0].error.empty()) << report.filesystems[0].error;
  EXPECT_GT(d.ranges_same, 0u);
  EXPECT_EQ(d.ranges_failed, 0u);
  EXPECT_GT(writes_in_dedupe.load(), 0u) << "the writer never overlapped the dedupe phase";
  std::printf("writes %llu (%llu during dedupe); ranges same %llu, changed %llu, differ %llu\n",
              static_cast<unsigned long long>(w.writes()),
              static_cast<unsigned long long>(writes_in_dedupe.load()),
              static_cast<unsigned long long>(d.ranges_same),
              static_cast<unsigned long long>(d.ranges_changed),
              static_cast<unsigned long long>(d.ranges_differ));
  check(before, w);
}

TEST_F(DuringDedupeTest, WriterDuringTheBinaryNeverLosesAWrite) {
  const auto before = state("t");
  std::vector<std::string> files;
  for (const auto& f : written_) files.push_back(path(f));
  Writer w(files, 99);
  w.start();
  std::this_thread::sleep_for(20ms);
  Child run({BTRDEDUPE_BINARY, "-dr", "--io-threads", "1", path("t")},
            fs().image_file() + ".out");
  const int rc = run.wait();
  const uint64_t writes_during_run = w.writes();
  w.stop();
  injected(w.writes());
  EXPECT_TRUE(rc == 0 || rc == 3) << rc << "\n" << run.output();
  EXPECT_GT(writes_during_run, 0u);
  check(before, w);
}

// SIGKILL at random moments of the dedupe phase (seen in --progress=json events); after
// each kill every file is as it was, and the hashfile still serves the next run.
TEST_F(DuringDedupeTest, KilledInTheMiddleOfItsDedupeChangesNoFile) {
  const auto before = state("t");
  const std::string hashfile = fs().image_file() + ".hash";
  const std::string out = fs().image_file() + ".out";
  std::mt19937 rng(7);
  int killed_in_dedupe = 0;
  for (int round = 0; round < 5; ++round) {
    run_command("sync && echo 3 > /proc/sys/vm/drop_caches");  // cold data: a slower dedupe
    Child run({BTRDEDUPE_BINARY, "-dr", "--io-threads", "1", "--progress=json",
               "--hashfile=" + hashfile, path("t")},
              out);
    bool in_dedupe = false;
    for (int i = 0; i < 20000 && run.running(); ++i) {
      if (read_file(out).find("\"phase\":\"dedupe\"") != std::string::npos) {
        in_dedupe = true;
        break;
      }
      std::this_thread::sleep_for(100us);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
    const bool was_running = run.running();
    run.kill(SIGKILL);
    const int rc = run.wait();
    if (was_running && rc == -SIGKILL) {
      killed_run();
      if (in_dedupe) ++killed_in_dedupe;
    }
    expect_unchanged(before, "t");
  }
  EXPECT_GE(killed_in_dedupe, 3) << "too few kills landed in the dedupe phase";
  // The next run finishes the work with the same hashfile.
  auto r = btrdedupe("-dr --hashfile=" + shell_quote(hashfile) + " " + shell_quote(path("t")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_unchanged(before, "t");
  run_command("rm -f " + shell_quote(hashfile) + "* " + shell_quote(out));
}

}  // namespace
}  // namespace btrdedupe::test
