#include "src/cli_options.h"

#include <fnmatch.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "src/byte_size.h"
#include "src/duration.h"

namespace po = boost::program_options;

namespace btrdedupe {
namespace {

// Options that collect every occurrence; any other valued option takes its last one, as
// duperemove's getopt loop does (a wrapper's default, then the caller's override).
const std::set<std::string>& composing() {
  static const std::set<std::string> s = {"paths", "exclude", "subvol", "exclude-subvol",
                                          "dedupe-options"};
  return s;
}

po::options_description visible_options() {
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
  po::options_description compat("Accepted for duperemove scripts, without effect here");
  compat.add_options()
      ("cpu-threads", po::value<unsigned>()->value_name("N"),
       "fingerprints come from the csum tree")
      ("skip-zeroes", "holes and prealloc are never read; zero blocks match like any data")
      ("readonly-open,A", "files are always opened read-only")
      ("one-file-system,x", "a scan never leaves its filesystem");
  po::options_description all;
  all.add(main).add(out).add(compat);
  return all;
}

// boost 1.74's error_with_option_name::what() replaces each %placeholder% of its template
// until none is left, so an option name or value that itself contains one ("-B %value%",
// "--%canonical_option%") made it loop forever: btrdedupe hung instead of saying what was
// wrong (found by tools/fuzz/fuzz_cli.cpp). The message is built from a copy whose
// substituted texts carry no '%', which is put back afterwards.
class OptionErrorMessage : public po::error_with_option_name {
 public:
  explicit OptionErrorMessage(const po::error_with_option_name& e)
      : po::error_with_option_name(e) {
    for (auto& entry : m_substitutions)
      std::replace(entry.second.begin(), entry.second.end(), '%', kPercent);
  }
  std::string text() const {
    std::string m = what();
    std::replace(m.begin(), m.end(), kPercent, '%');
    return m;
  }

 private:
  static constexpr char kPercent = '\x1f';
};

std::string option_error(const po::error& e) {
  if (const auto* named = dynamic_cast<const po::error_with_option_name*>(&e))
    return OptionErrorMessage(*named).text();
  return e.what();
}

std::optional<uint64_t> size_option(const po::variables_map& vm, const char* name,
                                    const std::string& what, std::string* error) {
  if (!vm.count(name)) return std::nullopt;
  const auto text = vm[name].as<std::string>();
  const auto size = parse_byte_size(text);
  if (!size) *error = what + ": '" + text + "' is not a size (examples: 4096, 128K, 1M)";
  return size;
}

std::string threads_option(const po::variables_map& vm, const char* name, unsigned* out) {
  if (!vm.count(name)) return "";
  *out = vm[name].as<unsigned>();
  if (*out == 0 || *out > 256) return std::string("--") + name + ": must be between 1 and 256";
  return "";
}

}  // namespace

std::string cli_help() {
  std::ostringstream out;
  out << "Usage: btrdedupe [options] PATH...\n"
         "       btrdedupe --fdupes [options] < fdupes-output\n"
         "       btrdedupe --hashfile=FILE [options]   (no PATH: repeat FILE's last run)\n"
         "Find duplicate data on btrfs from its own metadata (extents, backrefs, checksums)\n"
         "and, with -d, dedupe it with the kernel's byte-compared FIDEDUPERANGE.\n"
      << visible_options()
      << "\nExit status: 0 all done; 1 an error (a path, a filesystem or a read failed);\n"
         "2 bad usage; 3 finished, but some ranges were left as they were (changed since\n"
         "the scan, or refused by the kernel); 4 stopped at --max-runtime; 130/143 stopped\n"
         "cleanly on SIGINT/SIGTERM.\n"
         "See btrdedupe(8).\n";
  return out.str();
}

std::string apply_dedupe_options(const std::string& list, CliOptions& o) {
  std::stringstream in(list);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    any = true;
    if (item == "partial") {
      o.partial = true;
    } else if (item == "nopartial" || item == "only_whole_files") {
      o.partial = false;
    } else if (item == "noonly_whole_files") {
      o.partial = true;
    } else if (item == "rewrite") {
      o.rewrite = true;
    } else if (item == "norewrite") {
      o.rewrite = false;
    } else if (item == "same") {
      // Ranges inside one file are always candidates: nothing to change.
    } else if (item == "nosame") {
      o.no_effect.push_back("--dedupe-options=nosame: no effect here (ranges inside one file "
                            "are deduped like any others)");
    } else {
      return "--dedupe-options: unknown option '" + item +
             "' (known: [no]partial, [no]same, [no]only_whole_files, [no]rewrite)";
    }
  }
  if (!any) return "--dedupe-options: empty list";
  return "";
}

bool path_excluded(const std::vector<std::string>& patterns, const std::string& root,
                   const std::string& relative) {
  std::string full;
  for (const auto& pattern : patterns) {
    if (pattern.empty()) continue;
    const char* subject = relative.c_str();
    const char* pat = pattern.c_str();
    if (pattern[0] == '/') {
      if (full.empty()) {
        full = root;
        while (full.size() > 1 && full.back() == '/') full.pop_back();
        if (full != "/") full += '/';
        full += relative;
      }
      subject = full.c_str();
    } else {
      while (pat[0] == '.' && pat[1] == '/') pat += 2;  // "./x" means "x"
    }
    if (::fnmatch(pat, subject, FNM_LEADING_DIR) == 0) return true;
  }
  return false;
}

std::vector<std::vector<std::string>> read_fdupes_groups(std::istream& in) {
  std::vector<std::vector<std::string>> groups;
  std::vector<std::string> group;
  std::string line;
  auto flush = [&] {
    if (!group.empty()) groups.push_back(std::move(group));
    group.clear();
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      flush();
      continue;
    }
    // fdupes -S heads each group with "N bytes each:".
    const auto digits = line.find_first_not_of("0123456789");
    if (digits > 0 && digits != std::string::npos &&
        (line.compare(digits, std::string::npos, " bytes each:") == 0 ||
         line.compare(digits, std::string::npos, " byte each:") == 0))
      continue;
    group.push_back(line);
  }
  flush();
  return groups;
}

namespace {

// Parses argv into `vm`: of a repeated valued option only the last is stored. False (and
// `error` set) for what boost rejects.
bool parse_command_line(int argc, const char* const* argv, CliOptions& o, po::variables_map& vm,
                        std::string& error) {
  po::options_description all = visible_options();
  all.add_options()("paths", po::value<std::vector<std::string>>(), "")
      ("read-hashes", po::value<std::string>(), "")("write-hashes", po::value<std::string>(), "");
  po::positional_options_description positional;
  positional.add("paths", -1);
  try {
    auto options = po::command_line_parser(argc, argv).options(all).positional(positional).run();
    // A repeated switch is harmless (-v counts); of a repeated valued option the last wins.
    std::set<std::string> seen;
    std::vector<po::option> kept;
    for (auto opt = options.options.rbegin(); opt != options.options.rend(); ++opt) {
      const std::string& key = opt->string_key;
      if (key == "verbose") ++o.verbose;
      if (!composing().count(key) && !seen.insert(key).second) continue;
      kept.push_back(std::move(*opt));
    }
    std::reverse(kept.begin(), kept.end());
    options.options = std::move(kept);
    po::store(options, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    error = option_error(e);
    return false;
  }
  return true;
}

std::string refuse_hash_options(const po::variables_map& vm) {
  for (const char* name : {"read-hashes", "write-hashes"})
    if (vm.count(name))
      return std::string("--") + name +
             " is not supported: btrdedupe keeps fingerprints in its catalog (--hashfile)";
  return "";
}

void read_switches_and_lists(const po::variables_map& vm, CliOptions& o) {
  o.recursive = vm.count("recursive");
  o.dedupe = vm.count("dedupe");
  o.dry_run = vm.count("dry-run");
  o.human = vm.count("human");
  o.quiet = vm.count("quiet");
  o.debug = vm.count("debug");
  o.json = vm.count("json");
  o.fdupes = vm.count("fdupes");
  o.show_help = vm.count("help");
  o.show_version = vm.count("version");
  if (vm.count("paths")) o.paths = vm["paths"].as<std::vector<std::string>>();
  if (vm.count("exclude")) o.exclude = vm["exclude"].as<std::vector<std::string>>();
  if (vm.count("subvol")) o.subvols = vm["subvol"].as<std::vector<std::string>>();
  if (vm.count("exclude-subvol"))
    o.exclude_subvols = vm["exclude-subvol"].as<std::vector<std::string>>();
  o.all_subvols = vm.count("all-subvols");
  o.dedupe_readonly = vm.count("dedupe-readonly");
  o.list_subvols = vm.count("list-subvols");
}

std::string hashfile_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("hashfile")) return "";
  o.hashfile = vm["hashfile"].as<std::string>();
  if (o.hashfile.empty()) return "--hashfile: empty file name";
  return "";
}

std::string batchsize_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("batchsize")) return "";
  if (vm["batchsize"].as<unsigned>() == 0) return "-B/--batchsize: must be at least 1";
  o.window_files = vm["batchsize"].as<unsigned>();
  return "";
}

void note_compat_switches(const po::variables_map& vm, CliOptions& o) {
  if (vm.count("skip-zeroes"))
    o.no_effect.push_back("--skip-zeroes: no effect here (holes and preallocated ranges are "
                          "never read; written zero blocks are matched like any data)");
  if (vm.count("readonly-open"))
    o.no_effect.push_back("-A: no effect here (files are always opened read-only)");
  if (vm.count("one-file-system"))
    o.no_effect.push_back("-x: no effect here (a scan never leaves the filesystem of its PATH)");
}

std::string blocksize_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("blocksize")) return "";
  const auto text = vm["blocksize"].as<std::string>();
  const auto size = parse_byte_size(text);
  if (!size || *size < 4096 || *size % 4096 != 0 || *size > (1ULL << 30))
    return "-b: '" + text + "' is not a block size (a multiple of 4K up to 1G, e.g. 128K)";
  o.block_size = *size;
  return "";
}

std::string max_runtime_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("max-runtime")) return "";
  const auto text = vm["max-runtime"].as<std::string>();
  const auto seconds = parse_duration(text);
  if (!seconds || *seconds <= 0)
    return "--max-runtime: '" + text + "' is not a duration (examples: 90, 30s, 20m, 1h30m)";
  o.max_runtime = *seconds;
  return "";
}

std::string progress_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("progress")) return "";
  const auto mode = vm["progress"].as<std::string>();
  if (mode == "auto") {
    o.progress = ProgressMode::Auto;
  } else if (mode == "tty") {
    o.progress = ProgressMode::Tty;
  } else if (mode == "json") {
    o.progress = ProgressMode::Json;
  } else if (mode == "none") {
    o.progress = ProgressMode::None;
  } else {
    return "--progress: '" + mode + "' is not one of auto, tty, json, none";
  }
  return "";
}

std::string prefetch_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("prefetch")) return "";
  const auto how = vm["prefetch"].as<std::string>();
  if (how == "read") {
    o.prefetch = Prefetch::Read;
  } else if (how == "readahead") {
    o.prefetch = Prefetch::Readahead;
  } else if (how == "fadvise") {
    o.prefetch = Prefetch::Fadvise;
  } else if (how == "none") {
    o.prefetch = Prefetch::None;
  } else {
    return "--prefetch: '" + how + "' is not one of read, readahead, fadvise, none";
  }
  return "";
}

// The options with a value, in the order their errors are reported: the first wrong one.
std::string read_valued_options(const po::variables_map& vm, CliOptions& o) {
  std::string error;
  if (!(error = hashfile_option(vm, o)).empty()) return error;
  if (!(error = threads_option(vm, "io-threads", &o.io_threads)).empty()) return error;
  unsigned ignored = 0;
  if (!(error = threads_option(vm, "cpu-threads", &ignored)).empty()) return error;
  if (vm.count("cpu-threads"))
    o.no_effect.push_back("--cpu-threads: no effect here (fingerprints come from the csum tree; "
                          "the little data read is summed in one thread)");
  if (!(error = batchsize_option(vm, o)).empty()) return error;
  note_compat_switches(vm, o);
  if (!(error = blocksize_option(vm, o)).empty()) return error;
  if (!(error = max_runtime_option(vm, o)).empty()) return error;
  if (auto s = size_option(vm, "min-size", "--min-size", &error); s) o.min_size = *s;
  if (!error.empty()) return error;
  if (vm.count("dedupe-options"))
    for (const auto& list : vm["dedupe-options"].as<std::vector<std::string>>())
      if (!(error = apply_dedupe_options(list, o)).empty()) return error;
  if (!(error = progress_option(vm, o)).empty()) return error;
  return prefetch_option(vm, o);
}

// -L, -R, --stats and --history: each is the whole run. True when one (or more) is given;
// `error` then says what is wrong with it, if anything.
bool catalog_command(const po::variables_map& vm, CliOptions& o, std::string& error) {
  o.list_catalog = vm.count("-L");
  o.remove_from_catalog = vm.count("-R");
  o.catalog_stats = vm.count("stats");
  o.catalog_history = vm.count("history");
  const int catalog_commands =
      o.list_catalog + o.remove_from_catalog + o.catalog_stats + o.catalog_history;
  if (!catalog_commands) return false;
  if (catalog_commands > 1)
    error = "-L, -R, --stats and --history are separate commands: give one";
  else if (o.hashfile.empty())
    error = "-L, -R, --stats and --history need --hashfile=FILE";
  else if (o.remove_from_catalog && o.paths.empty())
    error = "-R needs the PATHs to forget";
  else if (!o.remove_from_catalog && !o.paths.empty())
    error = "-L, --stats and --history take no PATH";
  return true;
}

// What a run's PATHs, subvolume options and --fdupes must agree on.
std::string check_run_targets(CliOptions& o) {
  std::string error;
  for (const auto& word : o.subvols)
    if (word.empty()) error = "--subvol: empty ID or PATH";
  for (const auto& word : o.exclude_subvols)
    if (word.empty()) error = "--exclude-subvol: empty ID or PATH";
  if (!error.empty()) return error;
  if (o.fdupes && (!o.subvols.empty() || o.all_subvols || !o.exclude_subvols.empty()))
    return "--fdupes takes its files from stdin: --subvol, --exclude-subvol and --all-subvols "
           "do not apply";
  // --subvol PATH names the filesystem by itself (also with --hashfile: not a replay then);
  // an id needs a PATH on it.
  if (o.paths.empty() && !o.subvols.empty()) {
    for (const auto& word : o.subvols)
      if (word.find_first_not_of("0123456789") != std::string::npos) {
        o.paths.push_back(word);
        break;
      }
    if (o.paths.empty())
      return "--subvol " + o.subvols.front() + ": a subvolume id needs a PATH on its filesystem";
  }
  if (o.fdupes) {
    if (!o.paths.empty()) error = "--fdupes reads its files from stdin: give no PATH";
    if (!o.dry_run) o.dedupe = true;  // as duperemove: fdupes mode dedupes
  } else if (o.paths.empty() && o.hashfile.empty()) {
    error = "no PATH given (try --help)";  // with --hashfile alone: replay its last run
  }
  return error;
}

}  // namespace

ParsedCli parse_cli(int argc, const char* const* argv) {
  ParsedCli parsed;
  auto& o = parsed.options;
  auto& error = parsed.error;
  po::variables_map vm;
  if (!parse_command_line(argc, argv, o, vm, error)) return parsed;
  if (!(error = refuse_hash_options(vm)).empty()) return parsed;
  read_switches_and_lists(vm, o);
  if (!(error = read_valued_options(vm, o)).empty()) return parsed;
  if (o.show_help || o.show_version) return parsed;
  if (catalog_command(vm, o, error)) return parsed;
  if (o.list_subvols) {
    if (o.paths.size() != 1) error = "--list-subvols needs one PATH (any path on the filesystem)";
    return parsed;
  }
  error = check_run_targets(o);
  return parsed;
}

}  // namespace btrdedupe
