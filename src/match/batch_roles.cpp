#include "src/match/batch_roles.h"

namespace btrdedupe {

BatchRoles BatchRoles::window(size_t files) {
  BatchRoles roles;
  roles.roles_.assign(files, BatchRole::Own);
  roles.in_windows_ = true;
  return roles;
}

BatchRoles BatchRoles::incremental(size_t files) {
  BatchRoles roles;
  roles.roles_.assign(files, BatchRole::Own);
  return roles;
}

}  // namespace btrdedupe
