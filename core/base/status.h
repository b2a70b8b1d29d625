// Error handling for the engine: absl::Status / absl::StatusOr everywhere.
// Their codes are the google.rpc.Code numbers, which the C ABI and the gRPC
// service reuse unchanged, so no translation tables exist anywhere.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define PP_CONCAT_INNER_(a, b) a##b
#define PP_CONCAT_(a, b) PP_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` yields a non-OK status.
#define PP_RETURN_IF_ERROR(expr)                         \
    do {                                                 \
        ::absl::Status pp_status_ = (expr);              \
        if (!pp_status_.ok()) return pp_status_;         \
    } while (0)

// `PP_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define PP_ASSIGN_OR_RETURN(lhs, expr) \
    PP_ASSIGN_OR_RETURN_IMPL_(PP_CONCAT_(pp_statusor_, __LINE__), lhs, expr)
#define PP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
    auto tmp = (expr);                            \
    if (!tmp.ok()) return tmp.status();           \
    lhs = std::move(tmp).value()
