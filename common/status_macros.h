// Early-return helpers for absl::Status and absl::StatusOr<T>.
//
//   TC_RETURN_IF_ERROR(store.Commit(batch));
//   TC_ASSIGN_OR_RETURN(Job job, LoadJob(id));
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TC_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status tc_status_ = (expr);      \
    if (!tc_status_.ok()) return tc_status_; \
  } while (0)

#define TC_CONCAT_INNER_(a, b) a##b
#define TC_CONCAT_(a, b) TC_CONCAT_INNER_(a, b)

#define TC_ASSIGN_OR_RETURN(lhs, expr) \
  TC_ASSIGN_OR_RETURN_IMPL_(TC_CONCAT_(tc_statusor_, __LINE__), lhs, expr)

#define TC_ASSIGN_OR_RETURN_IMPL_(var, lhs, expr) \
  auto var = (expr);                              \
  if (!var.ok()) return var.status();             \
  lhs = std::move(var).value()
