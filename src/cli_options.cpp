#include "src/cli_options.h"

#include <boost/program_options.hpp>
#include <sstream>

#include "src/byte_size.h"

namespace po = boost::program_options;

namespace btrdedupe {
namespace {

po::options_description visible_options() {
  po::options_description d("Options");
  d.add_options()
      ("dedupe,d", "dedupe the duplicates found (otherwise only report them)")
      ("recursive,r", "scan directories recursively, nested subvolumes included")
      ("blocksize,b", po::value<std::string>()->value_name("SIZE"),
       "block size for partial matches (default 128K; a multiple of the sector size)")
      ("io-threads", po::value<unsigned>()->value_name("N"),
       "dedupe worker threads (default: 2)")
      ("human,h", "print sizes in human-readable units")
      ("quiet,q", "print only errors and the summary")
      ("min-size", po::value<std::string>()->value_name("SIZE"),
       "pass over files smaller than SIZE (K/M/G suffixes)")
      ("help", "show this help and exit")
      ("version", "show the version and exit");
  return d;
}

}  // namespace

std::string cli_help() {
  std::ostringstream out;
  out << "Usage: btrdedupe [options] PATH...\n"
         "Find duplicate data on btrfs from its own metadata: extents, backrefs, checksums.\n\n"
      << visible_options();
  return out.str();
}

ParsedCli parse_cli(int argc, const char* const* argv) {
  ParsedCli parsed;
  auto& o = parsed.options;
  po::options_description all = visible_options();
  all.add_options()("paths", po::value<std::vector<std::string>>(), "");
  po::positional_options_description positional;
  positional.add("paths", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    parsed.error = e.what();
    return parsed;
  }
  o.recursive = vm.count("recursive");
  o.dedupe = vm.count("dedupe");
  if (vm.count("io-threads")) {
    o.io_threads = vm["io-threads"].as<unsigned>();
    if (o.io_threads == 0 || o.io_threads > 256) {
      parsed.error = "--io-threads: must be between 1 and 256";
      return parsed;
    }
  }
  if (vm.count("blocksize")) {
    const auto text = vm["blocksize"].as<std::string>();
    const auto size = parse_byte_size(text);
    if (!size || *size < 4096 || *size % 4096 != 0 || *size > (1ULL << 30)) {
      parsed.error = "-b: '" + text + "' is not a block size (a multiple of 4K up to 1G, e.g. 128K)";
      return parsed;
    }
    o.block_size = *size;
  }
  o.human = vm.count("human");
  o.quiet = vm.count("quiet");
  o.show_help = vm.count("help");
  o.show_version = vm.count("version");
  if (vm.count("paths")) o.paths = vm["paths"].as<std::vector<std::string>>();
  if (vm.count("min-size")) {
    const auto text = vm["min-size"].as<std::string>();
    const auto size = parse_byte_size(text);
    if (!size) {
      parsed.error = "--min-size: '" + text + "' is not a size (examples: 4096, 128K, 1M)";
      return parsed;
    }
    o.min_size = *size;
  }
  if (o.paths.empty() && !o.show_help && !o.show_version)
    parsed.error = "no PATH given (try --help)";
  return parsed;
}

}  // namespace btrdedupe
