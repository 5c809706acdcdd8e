// The subfolder rule and the record path it gives each way of reading (catalog_rules.h).
#include "src/catalog/catalog_rules.h"

#include "src/scope/root_paths.h"

namespace btrdedupe {

CatalogScopeRule CatalogScopeRule::of(const std::optional<CatalogScope>& recorded,
                                      const CatalogScope& run) {
  CatalogScopeRule rule;
  // The same roots are the catalog's own run; other options shape other results, and
  // the catalog's rows would not serve them.
  if (recorded && recorded->options == run.options && recorded->roots != run.roots &&
      paths_within(run.roots, recorded->roots)) {
    rule.kind_ = Kind::SideRun;
    rule.catalog_roots_ = recorded->roots;
  }
  return rule;
}

RecordPath CatalogScopeRule::record_path(TreeRead read) const {
  if (kind_ == Kind::SideRun) return RecordPath::Side;
  switch (read) {
    case TreeRead::Whole:
      return RecordPath::Whole;
    case TreeRead::Changed:
      return RecordPath::Changed;
    case TreeRead::RootsWithSources:  // only a side run reads so
      return RecordPath::Side;
    case TreeRead::Windows:
      return RecordPath::Windows;
  }
  return RecordPath::Whole;
}

}  // namespace btrdedupe
