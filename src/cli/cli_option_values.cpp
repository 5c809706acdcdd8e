// Reading and checking the options with a value; why this is apart from the parsing:
// src/cli/cli_option_values.h.
#include "src/cli/cli_option_values.h"

#include <boost/program_options.hpp>
#include <optional>
#include <sstream>

#include "src/report/byte_size.h"
#include "src/report/duration.h"

namespace po = boost::program_options;

namespace btrdedupe {
namespace {

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

std::string duration_option(const po::variables_map& vm, const char* name, double* out) {
  if (!vm.count(name)) return "";
  const auto text = vm[name].as<std::string>();
  const auto seconds = parse_duration(text);
  if (!seconds || *seconds <= 0)
    return std::string("--") + name + ": '" + text + "' is not a duration (examples: 90, 30s, 5m)";
  *out = *seconds;
  return "";
}

// --follow's own options (src/follow/follower.h).
std::string follow_options(const po::variables_map& vm, CliOptions& o) {
  std::string error;
  if (!(error = duration_option(vm, "settle", &o.settle)).empty()) return error;
  if (!(error = duration_option(vm, "poll-interval", &o.poll_interval)).empty()) return error;
  if (vm.count("stall-limit")) {
    const double percent = vm["stall-limit"].as<double>();
    if (!(percent > 0 && percent <= 100)) return "--stall-limit: a percentage above 0, up to 100";
    o.stall_limit = percent / 100;
  }
  o.yield = !vm.count("no-yield");
  if (auto rate = size_option(vm, "max-read-rate", "--max-read-rate", &error); rate) {
    if (*rate == 0) return "--max-read-rate: must be more than 0";
    o.max_read_rate = *rate;
  }
  return error;
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

}  // namespace

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

std::string reader_option(const po::variables_map& vm, CliOptions& o) {
  if (!vm.count("reader")) return "";
  const auto& v = vm["reader"].as<std::string>();
  if (v == "tree") o.reader = ReaderKind::Tree;
  else if (v == "paths") o.reader = ReaderKind::Paths;
  else return "--reader: '" + v + "' (known: tree, paths)";
  return "";
}

std::string read_valued_options(const po::variables_map& vm, CliOptions& o) {
  std::string error;
  if (!(error = reader_option(vm, o)).empty()) return error;
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
  if (!(error = follow_options(vm, o)).empty()) return error;
  return prefetch_option(vm, o);
}

}  // namespace btrdedupe
