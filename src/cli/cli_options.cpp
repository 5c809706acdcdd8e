#include "src/cli/cli_options.h"

#include <fnmatch.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <set>
#include <sstream>

#include "src/cli/cli_option_table.h"
#include "src/cli/cli_option_values.h"

namespace po = boost::program_options;

namespace btrdedupe {
namespace {

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
         "cleanly on SIGINT/SIGTERM (--follow: 0).\n"
         "See btrdedupe(8).\n";
  return out.str();
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
  o.follow = vm.count("follow");
  o.follow_status = vm.count("status");
}

// --follow dedupes for as long as it runs, into its hashfile; --status reads a follower's.
std::string check_follow(CliOptions& o) {
  if (o.follow_status) {
    if (o.hashfile.empty()) return "--status needs --hashfile=FILE (the follower's)";
    if (o.follow || !o.paths.empty()) return "--status is a command of its own: give no PATH";
    return "";
  }
  if (!o.follow) return "";
  if (o.hashfile.empty()) return "--follow needs --hashfile=FILE (each cycle reads what changed since)";
  if (o.paths.empty()) return "--follow needs the PATHs to follow";
  if (o.dry_run || o.fdupes || o.json) return "--follow does not go with --dry-run, --fdupes or --json";
  o.dedupe = true;
  o.recursive = true;
  return "";
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
  if (!(error = check_follow(o)).empty() || o.follow_status) return parsed;
  if (o.list_subvols) {
    if (o.paths.size() != 1) error = "--list-subvols needs one PATH (any path on the filesystem)";
    return parsed;
  }
  error = check_run_targets(o);
  return parsed;
}

}  // namespace btrdedupe
