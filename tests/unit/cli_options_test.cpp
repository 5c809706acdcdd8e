// Parsing the command line: duperemove's options, btrdedupe's own, and the errors.
#include "src/cli/cli_options.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <sstream>

#include "src/scope/fdupes_input.h"

namespace btrdedupe {
namespace {

ParsedCli parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"btrdedupe"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_cli(static_cast<int>(argv.size()), argv.data());
}

CliOptions ok(std::initializer_list<const char*> args) {
  auto p = parse(args);
  EXPECT_EQ(p.error, "");
  return p.options;
}

std::string error(std::initializer_list<const char*> args) { return parse(args).error; }

TEST(CliOptions, Defaults) {
  const auto o = ok({"/mnt"});
  EXPECT_EQ(o.paths, std::vector<std::string>{"/mnt"});
  EXPECT_FALSE(o.recursive);
  EXPECT_FALSE(o.dedupe);
  EXPECT_FALSE(o.dry_run);
  EXPECT_EQ(o.block_size, 128u * 1024);
  EXPECT_EQ(o.io_threads, 0u);
  EXPECT_TRUE(o.partial);
  EXPECT_FALSE(o.json);
  EXPECT_EQ(o.progress, ProgressMode::Auto);
  EXPECT_EQ(o.verbose, 0u);
  EXPECT_TRUE(o.no_effect.empty());
  EXPECT_TRUE(o.hashfile.empty());
}

TEST(CliOptions, DuperemoveShortOptionsCombine) {
  const auto o = ok({"-dhqr", "/a", "/b"});
  EXPECT_TRUE(o.dedupe);
  EXPECT_TRUE(o.human);
  EXPECT_TRUE(o.quiet);
  EXPECT_TRUE(o.recursive);
  EXPECT_EQ(o.paths, (std::vector<std::string>{"/a", "/b"}));
}

TEST(CliOptions, RepeatedSwitchesAreHarmlessAndVerboseCounts) {
  const auto o = ok({"-v", "-d", "-d", "-vv", "--debug", "/a"});
  EXPECT_EQ(o.verbose, 3u);
  EXPECT_TRUE(o.dedupe);
  EXPECT_TRUE(o.debug);
}

// A wrapper's default, then the caller's override: the last one wins, as in duperemove.
TEST(CliOptions, LastOccurrenceOfAValuedOptionWins) {
  auto o = ok({"--io-threads=2", "--io-threads=4", "-b", "64K", "-b", "256K", "--hashfile=a",
               "--hashfile=b", "--progress=tty", "--progress=none", "-B", "9", "-B", "12",
               "--min-size=1M", "--min-size", "2M", "/mnt", "/srv"});
  EXPECT_EQ(o.io_threads, 4u);
  EXPECT_EQ(o.block_size, 256u * 1024);
  EXPECT_EQ(o.hashfile, "b");
  EXPECT_EQ(o.progress, ProgressMode::None);
  EXPECT_EQ(o.window_files, 12u);
  EXPECT_EQ(o.min_size, 2u << 20);
  EXPECT_EQ(o.paths, (std::vector<std::string>{"/mnt", "/srv"}));  // every path is kept
  // Only the one that wins is checked: a bad value overridden later is no error.
  EXPECT_EQ(ok({"--io-threads=0", "--io-threads=3", "/"}).io_threads, 3u);
  EXPECT_NE(error({"--io-threads=3", "--io-threads=0", "/"}), "");
  // Collecting options keep every occurrence.
  o = ok({"--exclude", "a", "--exclude", "b", "--dedupe-options=nopartial",
          "--dedupe-options=partial", "/"});
  EXPECT_EQ(o.exclude, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.partial);
}

TEST(CliOptions, MaxRuntimeTakesADuration) {
  EXPECT_EQ(ok({"--max-runtime", "5s", "/"}).max_runtime, 5.0);
  EXPECT_EQ(ok({"--max-runtime=90", "/"}).max_runtime, 90.0);
  EXPECT_EQ(ok({"--max-runtime=1h30m", "/"}).max_runtime, 5400.0);
  EXPECT_EQ(ok({"--max-runtime=20min", "/"}).max_runtime, 1200.0);
  EXPECT_EQ(ok({"/"}).max_runtime, 0.0);
  for (const char* bad : {"--max-runtime=", "--max-runtime=soon", "--max-runtime=0",
                          "--max-runtime=5x", "--max-runtime=-3"})
    EXPECT_NE(error({bad, "/"}).find("--max-runtime"), std::string::npos) << bad;
}

TEST(CliOptions, HelpSaysWhichOptionsHaveNoEffect) {
  const std::string help = cli_help();
  const auto compat = help.find("without effect here");
  ASSERT_NE(compat, std::string::npos);
  EXPECT_LT(help.find("--batchsize"), compat);  // -B sets the window size: it has an effect
  EXPECT_LT(help.find("--max-runtime"), compat);
  EXPECT_GT(help.find("--cpu-threads"), compat);
  EXPECT_GT(help.find("--skip-zeroes"), compat);
}

TEST(CliOptions, SizesTakeSuffixes) {
  EXPECT_EQ(ok({"-b", "64K", "/a"}).block_size, 64u * 1024);
  EXPECT_EQ(ok({"-b1M", "/a"}).block_size, 1024u * 1024);
  EXPECT_EQ(ok({"--min-size", "1G", "/a"}).min_size, 1ULL << 30);
  EXPECT_EQ(ok({"--min-size=4096", "/a"}).min_size, 4096u);
}

TEST(CliOptions, ThreadCounts) {
  EXPECT_EQ(ok({"--io-threads", "4", "/a"}).io_threads, 4u);
  EXPECT_EQ(ok({"--io-threads=1", "/a"}).io_threads, 1u);
  EXPECT_EQ(error({"--io-threads", "0", "/a"}), "--io-threads: must be between 1 and 256");
  EXPECT_EQ(error({"--cpu-threads", "999", "/a"}), "--cpu-threads: must be between 1 and 256");
}

TEST(CliOptions, AcceptedWithoutEffectAreNotedOnce) {
  const auto o = ok({"--cpu-threads=4", "--skip-zeroes", "--skip-zeroes", "-A", "-x", "/a"});
  ASSERT_EQ(o.no_effect.size(), 4u);
  EXPECT_EQ(o.no_effect[0].rfind("--cpu-threads: no effect here", 0), 0u) << o.no_effect[0];
  EXPECT_EQ(o.no_effect[1].rfind("--skip-zeroes: no effect here", 0), 0u) << o.no_effect[1];
}

TEST(CliOptions, BatchSizeSetsTheFilesPerWindow) {
  const auto o = ok({"-B", "1000", "/a"});
  EXPECT_EQ(o.window_files, 1000u);
  EXPECT_TRUE(o.no_effect.empty());
  EXPECT_EQ(ok({"--batchsize=8", "/a"}).window_files, 8u);
  EXPECT_EQ(ok({"/a"}).window_files, 0u);  // automatic
  EXPECT_EQ(error({"-B", "0", "/a"}), "-B/--batchsize: must be at least 1");
}

TEST(CliOptions, DedupeOptions) {
  EXPECT_FALSE(ok({"--dedupe-options=nopartial", "/a"}).partial);
  EXPECT_FALSE(ok({"--dedupe-options=only_whole_files", "/a"}).partial);
  EXPECT_TRUE(ok({"--dedupe-options=partial", "/a"}).partial);
  EXPECT_TRUE(ok({"--dedupe-options=same,partial", "/a"}).partial);
  EXPECT_TRUE(ok({"--dedupe-options=same", "/a"}).no_effect.empty());
  // The last word wins, across repeats too.
  EXPECT_TRUE(ok({"--dedupe-options=nopartial,partial", "/a"}).partial);
  EXPECT_FALSE(
      ok({"--dedupe-options=partial", "--dedupe-options", "only_whole_files", "/a"}).partial);
  const auto nosame = ok({"--dedupe-options=nosame", "/a"});
  ASSERT_EQ(nosame.no_effect.size(), 1u);
  EXPECT_NE(nosame.no_effect[0].find("nosame: no effect here"), std::string::npos);
  EXPECT_EQ(error({"--dedupe-options=fiemap", "/a"}),
            "--dedupe-options: unknown option 'fiemap' (known: [no]partial, [no]same, "
            "[no]only_whole_files, [no]rewrite)");
  EXPECT_TRUE(ok({"/a"}).rewrite);
  EXPECT_FALSE(ok({"--dedupe-options=norewrite", "/a"}).rewrite);
  EXPECT_TRUE(ok({"--dedupe-options=norewrite,rewrite", "/a"}).rewrite);
  EXPECT_EQ(error({"--dedupe-options=,", "/a"}), "--dedupe-options: empty list");
  EXPECT_NE(error({"--dedupe-options=", "/a"}), "");
}

TEST(CliOptions, ExcludeRepeats) {
  const auto o = ok({"--exclude", "*.tmp", "--exclude=.snapshots", "/a"});
  EXPECT_EQ(o.exclude, (std::vector<std::string>{"*.tmp", ".snapshots"}));
}

TEST(CliOptions, ProgressModes) {
  EXPECT_EQ(ok({"--progress=json", "/a"}).progress, ProgressMode::Json);
  EXPECT_EQ(ok({"--progress", "tty", "/a"}).progress, ProgressMode::Tty);
  EXPECT_EQ(ok({"--progress=none", "/a"}).progress, ProgressMode::None);
  EXPECT_EQ(ok({"--progress=auto", "/a"}).progress, ProgressMode::Auto);
  EXPECT_EQ(error({"--progress=fancy", "/a"}),
            "--progress: 'fancy' is not one of auto, tty, json, none");
}

// --prefetch: how the dedupe warms its ranges; the default is fadvise.
TEST(CliOptions, PrefetchModes) {
  EXPECT_EQ(ok({"/a"}).prefetch, Prefetch::Fadvise);
  EXPECT_EQ(ok({"--prefetch=read", "/a"}).prefetch, Prefetch::Read);
  EXPECT_EQ(ok({"--prefetch", "readahead", "/a"}).prefetch, Prefetch::Readahead);
  EXPECT_EQ(ok({"--prefetch=none", "/a"}).prefetch, Prefetch::None);
  EXPECT_EQ(ok({"--prefetch=none", "--prefetch=fadvise", "/a"}).prefetch, Prefetch::Fadvise);
  EXPECT_EQ(error({"--prefetch=mmap", "/a"}),
            "--prefetch: 'mmap' is not one of read, readahead, fadvise, none");
}

// --reader: asked for by name; without it, none is asked for (the filesystem chooses).
TEST(CliOptions, ReaderByName) {
  EXPECT_FALSE(ok({"/a"}).reader.has_value());
  EXPECT_EQ(ok({"--reader=tree", "/a"}).reader, ReaderKind::Tree);
  EXPECT_EQ(ok({"--reader", "paths", "/a"}).reader, ReaderKind::Paths);
  EXPECT_EQ(error({"--reader=fiemap", "/a"}), "--reader: 'fiemap' (known: tree, paths)");
}

TEST(CliOptions, OwnOptions) {
  const auto o = ok({"--json", "--dry-run", "-d", "/a"});
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.dry_run);
  EXPECT_TRUE(o.dedupe);  // main turns -d off under --dry-run
}

TEST(CliOptions, HashfileIsKept) {
  EXPECT_EQ(ok({"-dr", "--hashfile=/var/lib/x.hash", "/a"}).hashfile, "/var/lib/x.hash");
  EXPECT_EQ(ok({"--hashfile", "h", "/a"}).hashfile, "h");
  EXPECT_NE(error({"--hashfile=", "/a"}), "");
  EXPECT_EQ(error({"--hashfile", "", "/a"}), "--hashfile: empty file name");
}

TEST(CliOptions, FdupesModeReadsStdinAndDedupes) {
  auto o = ok({"--fdupes"});
  EXPECT_TRUE(o.fdupes);
  EXPECT_TRUE(o.dedupe);  // as in duperemove, fdupes mode dedupes
  o = ok({"--fdupes", "--dry-run"});
  EXPECT_FALSE(o.dedupe);
  EXPECT_EQ(error({"--fdupes", "/a"}), "--fdupes reads its files from stdin: give no PATH");
}

TEST(CliOptions, HashFilesOfOldDuperemoveAreRefusedWithAReason) {
  EXPECT_EQ(error({"--write-hashes=h", "/a"}),
            "--write-hashes is not supported: btrdedupe keeps fingerprints in its catalog "
            "(--hashfile)");
  EXPECT_EQ(error({"--read-hashes", "h"}),
            "--read-hashes is not supported: btrdedupe keeps fingerprints in its catalog "
            "(--hashfile)");
}

TEST(CliOptions, UsageErrorsAreOneLine) {
  for (const auto& e : {error({}), error({"--no-such"}), error({"-b", "3K", "/a"}),
                        error({"-b", "lots", "/a"}), error({"--min-size", "x", "/a"}),
                        error({"--io-threads", "many", "/a"}), error({"-b"}),
                        error({"-L", "/a"})}) {
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_EQ(error({}), "no PATH given (try --help)");
  EXPECT_EQ(error({"-b", "3K", "/a"}),
            "-b: '3K' is not a block size (a multiple of 4K up to 1G, e.g. 128K)");
  EXPECT_EQ(error({"--min-size", "x", "/a"}),
            "--min-size: 'x' is not a size (examples: 4096, 128K, 1M)");
}

TEST(CliOptions, HelpAndVersionNeedNoPath) {
  EXPECT_TRUE(ok({"--help"}).show_help);
  EXPECT_TRUE(ok({"--version"}).show_version);
  const auto help = cli_help();
  for (const char* flag : {"--dedupe", "--recursive", "--quiet", "--verbose", "--debug", "--human",
                           "--help", "--version", "--blocksize", "--batchsize", "--io-threads",
                           "--cpu-threads", "--exclude", "--skip-zeroes", "--dedupe-options",
                           "--fdupes", "--json", "--progress", "--dry-run", "--min-size",
                           "--hashfile", "Exit status"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
}

TEST(PathExcluded, GlobsOnThePathBelowTheRoot) {
  const std::vector<std::string> p{"*.tmp", "cache", "./build/*.o", "/mnt/pool/keep/*"};
  EXPECT_TRUE(path_excluded(p, "/mnt/pool", "x.tmp"));
  EXPECT_TRUE(path_excluded(p, "/mnt/pool", "a/b/x.tmp"));  // * matches '/'
  EXPECT_TRUE(path_excluded(p, "/mnt/pool", "cache"));
  EXPECT_TRUE(path_excluded(p, "/mnt/pool", "cache/deep/file"));  // a leading directory
  EXPECT_FALSE(path_excluded(p, "/mnt/pool", "a/cache/file"));    // "cache" is anchored
  EXPECT_FALSE(path_excluded(p, "/mnt/pool", "cachet"));
  EXPECT_TRUE(path_excluded(p, "/mnt/pool", "build/x.o"));
  EXPECT_FALSE(path_excluded(p, "/mnt/pool", "build/x.c"));
  // An absolute pattern is matched against the full path.
  EXPECT_TRUE(path_excluded(p, "/mnt/pool/", "keep/f"));
  EXPECT_FALSE(path_excluded(p, "/mnt/other", "keep/f"));
  EXPECT_TRUE(path_excluded({"/*"}, "/", "f"));
  EXPECT_FALSE(path_excluded({}, "/mnt", "f"));
  EXPECT_TRUE(path_excluded({"*/.snapshots"}, "/mnt", "home/.snapshots/1/snapshot/f"));
}

TEST(FdupesInput, BlankLinesSeparateGroups) {
  std::istringstream in(
      "/a/one\n/b/one\n\n/a/two\n/b/two\n/c/two\n\n\n/a/alone\n\r\n1024 bytes each:\n"
      "/x with space\n/y\r\n");
  const auto groups = read_fdupes_groups(in);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0], (std::vector<std::string>{"/a/one", "/b/one"}));
  EXPECT_EQ(groups[1], (std::vector<std::string>{"/a/two", "/b/two", "/c/two"}));
  EXPECT_EQ(groups[2], (std::vector<std::string>{"/a/alone"}));
  EXPECT_EQ(groups[3], (std::vector<std::string>{"/x with space", "/y"}));
  std::istringstream empty("");
  EXPECT_TRUE(read_fdupes_groups(empty).empty());
}

TEST(FdupesInput, CommonDirectory) {
  EXPECT_EQ(common_directory({"/a/b/x", "/a/c/y"}), "/a");
  EXPECT_EQ(common_directory({"/a/b/x", "/a/b/y"}), "/a/b");
  EXPECT_EQ(common_directory({"/a/bc/x", "/a/b/y"}), "/a");
  EXPECT_EQ(common_directory({"/a/x", "/b/y"}), "/");
  EXPECT_EQ(common_directory({"/a/b/x"}), "/a/b");
}

TEST(FdupesInput, FilterKeepsListedFilesAndDirectoriesHoldingThem) {
  FdupesScan s;
  s.wanted["/m"] = {"a/x", "snap/b/y", "z"};
  EXPECT_FALSE(s.excluded("/m", "a/x"));
  EXPECT_FALSE(s.excluded("/m", "z"));
  EXPECT_TRUE(s.excluded("/m", "a/other"));
  EXPECT_FALSE(s.excluded("/m", "snap"));      // a subvolume holding a listed file
  EXPECT_FALSE(s.excluded("/m", "snap/b"));
  EXPECT_TRUE(s.excluded("/m", "sna"));
  EXPECT_TRUE(s.excluded("/m", "other-snap"));
  EXPECT_FALSE(s.excluded("/elsewhere", "q"));  // not an fdupes root: not filtered
}

TEST(CliOptions, FollowImpliesADedupeOfTheTreesIntoItsHashfile) {
  const auto o = ok({"--follow", "--hashfile=/var/lib/h", "/pool"});
  EXPECT_TRUE(o.follow);
  EXPECT_TRUE(o.dedupe);
  EXPECT_TRUE(o.recursive);
  EXPECT_EQ(o.settle, 15);
  EXPECT_EQ(o.poll_interval, 5);
  EXPECT_DOUBLE_EQ(o.stall_limit, 0.2);
  EXPECT_TRUE(o.yield);
  EXPECT_EQ(o.max_read_rate, 0u);
}

TEST(CliOptions, FollowTuning) {
  const auto o = ok({"--follow", "--hashfile=h", "--settle=2m", "--poll-interval", "30s",
                     "--stall-limit=35", "--no-yield", "--max-read-rate=50M", "/pool"});
  EXPECT_EQ(o.settle, 120);
  EXPECT_EQ(o.poll_interval, 30);
  EXPECT_DOUBLE_EQ(o.stall_limit, 0.35);
  EXPECT_FALSE(o.yield);
  EXPECT_EQ(o.max_read_rate, 50u << 20);
}

TEST(CliOptions, FollowMisuse) {
  EXPECT_NE(error({"--follow", "/pool"}).find("--follow needs --hashfile"), std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h"}).find("needs the PATHs"), std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--dry-run", "/p"}).find("does not go with"),
            std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--json", "/p"}).find("does not go with"),
            std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--settle=soon", "/p"}).find("not a duration"),
            std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--settle=0", "/p"}).find("not a duration"),
            std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--stall-limit=0", "/p"}).find("percentage"),
            std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--stall-limit=101", "/p"}).find("percentage"),
            std::string::npos);
  EXPECT_NE(error({"--follow", "--hashfile=h", "--max-read-rate=0", "/p"}).find("more than 0"),
            std::string::npos);
}

TEST(CliOptions, StatusIsACommandOfItsOwn) {
  const auto o = ok({"--status", "--hashfile=/var/lib/h", "--json"});
  EXPECT_TRUE(o.follow_status);
  EXPECT_TRUE(o.json);
  EXPECT_NE(error({"--status"}).find("needs --hashfile"), std::string::npos);
  EXPECT_NE(error({"--status", "--hashfile=h", "/pool"}).find("give no PATH"), std::string::npos);
}

}  // namespace
}  // namespace btrdedupe
