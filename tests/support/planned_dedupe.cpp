#include "support/planned_dedupe.h"

#include <gtest/gtest.h>

#include "src/fingerprint/short_file_proof.h"

namespace btrdedupe::test {

PlannedDedupe plan_dedupe(const std::string& dir, const PlanOptions& options) {
  PlannedDedupe p;
  ScanOptions so;
  so.fold_readonly_aliases = !options.dedupe_readonly;  // as run_job does
  auto scan = scan_tree(dir, so);
  EXPECT_TRUE(scan.ok()) << scan.error().message();
  if (!scan.ok()) return p;
  p.scan = std::move(*scan);
  auto fp = fingerprint(p.scan);
  EXPECT_TRUE(fp.ok()) << fp.error().message();
  if (!fp.ok()) return p;
  p.fp = std::move(*fp);
  p.matches = find_duplicates(p.scan, p.fp, {});
  prove_short_files(p.scan, p.fp, p.matches);  // as match_and_plan does
  p.plan = plan_rounds(p.scan, p.matches, options);
  return p;
}

}  // namespace btrdedupe::test
