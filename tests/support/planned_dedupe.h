// The engine's stages up to a dedupe plan, for tests that then change files before
// running the plan (or inspect it). Failures are reported as test failures.
#pragma once

#include <string>

#include "src/plan/dedupe_plan.h"
#include "src/match/duplicate_match.h"
#include "src/fingerprint/fingerprint.h"
#include "src/read/tree_scan.h"

namespace btrdedupe::test {

struct PlannedDedupe {
  ScanResult scan;
  FingerprintResult fp;
  MatchResult matches;
  DedupePlan plan;
};

// Scans `dir` (recursively), fingerprints, matches and plans.
PlannedDedupe plan_dedupe(const std::string& dir, const PlanOptions& options = {});

}  // namespace btrdedupe::test
