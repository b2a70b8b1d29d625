#include "cli/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"

namespace prepack::cli {

absl::StatusOr<std::string> Sha256File(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
        return absl::InternalError("OpenSSL could not start a SHA-256 digest");
    }
    char buf[1 << 16];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
        EVP_DigestUpdate(ctx.get(), buf, static_cast<size_t>(f.gcount()));
        if (!f) break;
    }
    if (f.bad()) return absl::DataLossError(absl::StrCat("error reading '", path, "'"));
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &len);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
        out += kHex[digest[i] >> 4];
        out += kHex[digest[i] & 0xf];
    }
    return out;
}

}  // namespace prepack::cli
