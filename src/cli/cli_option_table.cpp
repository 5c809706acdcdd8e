// The command line's option table; why this is apart from the parsing: src/cli/cli_option_table.h.
#include "src/cli/cli_option_table.h"

#include <boost/program_options.hpp>

namespace po = boost::program_options;

namespace btrdedupe {

const std::set<std::string>& composing() {
  static const std::set<std::string> s = {"paths", "exclude", "subvol", "exclude-subvol",
                                          "dedupe-options"};
  return s;
}

namespace {

// One function per section --help prints, in the order it prints them.

po::options_description main_options() {
  po::options_description main("Main options");
  main.add_options()
      ("dedupe,d", "dedupe the duplicates found (otherwise only report them)")
      ("recursive,r", "scan directories recursively, nested subvolumes included")
      ("dry-run", "plan the dedupe and say what -d would change, change nothing")
      ("exclude", po::value<std::vector<std::string>>()->value_name("PATTERN")->composing(),
       "leave out files and directories whose path below PATH matches this glob "
       "(repeatable; '*' also matches '/'; a PATTERN starting with / matches the full path)")
      ("subvol", po::value<std::vector<std::string>>()->value_name("ID|PATH")->composing(),
       "scan exactly this subvolume, whole (repeatable; a PATH is its top directory); "
       "PATH then only names the filesystem")
      ("exclude-subvol", po::value<std::vector<std::string>>()->value_name("ID|PATH")->composing(),
       "leave this subvolume out (repeatable)")
      ("all-subvols", "every subvolume of the filesystem of PATH (any path on it), each whole")
      ("dedupe-readonly", "also dedupe inside read-only snapshots (they are only sources "
       "otherwise; see btrdedupe(8) on btrfs send)")
      ("list-subvols", "list the subvolumes of PATH's filesystem (id, path, read-only, "
       "snapshot of, generation, last scanned with --hashfile, exclusive and shared bytes) "
       "and exit")
      ("min-size", po::value<std::string>()->value_name("SIZE"),
       "pass over files smaller than SIZE (K/M/G suffixes)")
      ("dedupe-options", po::value<std::vector<std::string>>()->value_name("LIST")->composing(),
       "comma-separated: [no]partial (ranges inside non-identical files; default partial), "
       "only_whole_files (= nopartial), [no]same (ranges inside one file; always on), "
       "[no]rewrite (copy a small unique remainder of an extent so that the extent is "
       "freed; default rewrite)")
      ("fdupes", "read groups of identical files from stdin (fdupes output: one path per line, "
       "groups separated by blank lines) and dedupe them as whole files")
      ("blocksize,b", po::value<std::string>()->value_name("SIZE"),
       "block size for partial matches (default 128K; a multiple of 4K)")
      ("reader", po::value<std::string>()->value_name("tree|paths"),
       "how to read the trees: tree search of btrfs (root), or a walk of the paths (any "
       "user, btrfs or XFS; data is read). Default: tree where it is allowed")
      ("io-threads", po::value<unsigned>()->value_name("N"),
       "threads reading data for fingerprints and running dedupe rounds "
       "(default: 4 on non-rotational storage, else 2)")
      ("batchsize,B", po::value<unsigned>()->value_name("N"),
       "read, match and dedupe the tree in windows of N files (memory follows N); default: "
       "whole up to 180000 files, then windows of 16384")
      ("max-runtime", po::value<std::string>()->value_name("DURATION"),
       "a time box (90, 30s, 20m, 1h30m): the largest duplicate groups are deduped first, "
       "no new dedupe round starts once the time is up, and the run ends as on SIGTERM "
       "(exit 4); with --hashfile the next run does the rest")
      ("hashfile", po::value<std::string>()->value_name("FILE"),
       "keep scan and fingerprint state in FILE between runs (the catalog)")
      (",L", "list what the hashfile holds and exit (needs --hashfile)")
      (",R", "forget the files under each PATH in the hashfile and exit (needs --hashfile)")
      ("stats", "show what the hashfile holds and how much of it is duplicated, and exit")
      ("history", "list the runs recorded in the hashfile, and exit");
  return main;
}

po::options_description follow_options() {
  po::options_description follow("Follow mode (btrdedupe(8), FOLLOW MODE)");
  follow.add_options()
      ("follow", "keep running: a first pass, then dedupe what lands as it lands (implies "
       "-d -r; needs --hashfile; --max-runtime then limits each cycle)")
      ("settle", po::value<std::string>()->value_name("DURATION"),
       "a change is read once the filesystem has been quiet this long, and a file once it "
       "has not changed for this long (default 15s)")
      ("poll-interval", po::value<std::string>()->value_name("DURATION"),
       "how often the follower looks at the filesystem's generation (default 5s)")
      ("stall-limit", po::value<double>()->value_name("PERCENT"),
       "pause new dedupe rounds while other tasks stall on I/O or CPU more than this share "
       "of the time (pressure stall information; default 20)")
      ("no-yield", "never pause for others, and keep the process's CPU and I/O priority "
       "(by default a follower runs at idle priority)")
      ("max-read-rate", po::value<std::string>()->value_name("SIZE"),
       "at most this many bytes read per second by the dedupe rounds (K/M/G suffixes)")
      ("status", "print what the follower of --hashfile has done and is doing, and exit "
       "(exit 0 running, 3 not running; with --json as one JSON object)");
  return follow;
}

po::options_description output_options() {
  po::options_description out("Output");
  out.add_options()
      ("human,h", "print sizes in human-readable units")
      ("quiet,q", "print only errors and the summary line")
      ("verbose,v", "also list every duplicate group when deduping")
      ("debug", "also print internal counters and the options in effect")
      ("json", "print the whole report as one JSON document on stdout "
       "(docs/json-report.md)")
      ("progress", po::value<std::string>()->value_name("MODE"),
       "auto (a live line when stderr is a terminal), tty (always), json (line-delimited "
       "JSON events on stderr), none")
      ("prefetch", po::value<std::string>()->value_name("HOW"),
       "how each dedupe round warms the page cache before the kernel compares: fadvise "
       "(default), read, readahead, none")
      ("help", "show this help and exit")
      ("version", "show the version and exit");
  return out;
}

// Accepted so that scripts written for duperemove run unchanged.
po::options_description duperemove_options() {
  po::options_description compat("Accepted for duperemove scripts, without effect here");
  compat.add_options()
      ("cpu-threads", po::value<unsigned>()->value_name("N"),
       "fingerprints come from the csum tree")
      ("skip-zeroes", "holes and prealloc are never read; zero blocks match like any data")
      ("readonly-open,A", "files are always opened read-only")
      ("one-file-system,x", "a scan never leaves its filesystem");
  return compat;
}

}  // namespace

po::options_description visible_options() {
  po::options_description all;
  all.add(main_options()).add(follow_options()).add(output_options()).add(duperemove_options());
  return all;
}

}  // namespace btrdedupe
