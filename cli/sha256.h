// SHA-256 of a file, for the manifest of `prepack batch plan` (which records
// the input it was planned from), by OpenSSL's EVP digest.
#pragma once

#include <string>

#include "core/base/status.h"

namespace prepack::cli {

// Lowercase hex digest of the file's bytes; NOT_FOUND when it cannot be read.
absl::StatusOr<std::string> Sha256File(const std::string& path);

}  // namespace prepack::cli
