#include "core/forward/cuda_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace prepack {
namespace {

// The folder of the file this code was loaded from (the executable, or
// libprepack.so when the C ABI is in use).
std::string OwnDir() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&OwnDir), &info) == 0 || info.dli_fname == nullptr) return "";
    const std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
}

absl::StatusOr<const CudaModule*> Load() {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("PREPACK_CUDA_MODULE"); env != nullptr && *env != '\0') {
        candidates.push_back(env);   // also in a build without nvcc: the emulated module's tests use it
    } else {
#ifndef PREPACK_CUDA_MODULE_BUILT
        return absl::UnimplementedError(
            "this build has no CUDA backend (nvcc was not found when it was built); use device cpu");
#endif
        const std::string dir = OwnDir();
        if (!dir.empty()) {
            candidates.push_back(dir + "/" + kCudaModuleFile);
            candidates.push_back(dir + "/../lib/" + kCudaModuleFile);
        }
        candidates.push_back(kCudaModuleFile);
    }
    std::string errors;
    for (const std::string& path : candidates) {
        // RTLD_LOCAL: the module's copy of the core stays its own.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char* e = dlerror();
            absl::StrAppend(&errors, errors.empty() ? "" : "; ", e ? e : path);
            continue;
        }
        // Never closed: runners and pools it made hold its code until exit.
        using Entry = const CudaModule* (*)();
        auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaModuleSymbol));
        if (entry == nullptr) {
            return absl::UnavailableError(absl::StrCat(path, " has no ", kCudaModuleSymbol, " (a stale build?)"));
        }
        return entry();
    }
    return absl::UnavailableError(absl::StrCat("cannot load the CUDA backend ", kCudaModuleFile,
                                               " (set PREPACK_CUDA_MODULE to its path): ", errors));
}

}  // namespace

absl::StatusOr<const CudaModule*> LoadCudaModule() {
    static std::once_flag once;
    static absl::StatusOr<const CudaModule*> module = absl::UnknownError("not loaded");
    std::call_once(once, [] { module = Load(); });
    return module;
}

}  // namespace prepack
