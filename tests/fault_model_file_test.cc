// Hostile model files beyond the GGUF parser (gguf_test covers the parser
// itself: truncations, corrupt counts, random corruption): a small file whose
// metadata claims a huge model. Regression test for a fuzz finding:
// LoadWeights sized and allocated the f32 weight storage from the metadata
// (up to 90% of free memory) before checking that a single tensor exists, so
// a 1 KB file could make the loader allocate gigabytes.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "core/model/gguf.h"
#include "core/model/model.h"
#include "core/model/model_config.h"
#include "core/model/weights.h"
#include "tests/gguf_builder.h"

namespace prepack {
namespace {

// llama metadata for a ~5 GB f32 model (dim 4096, 6 layers, vocab 32000)
// and no tensors at all.
std::vector<uint8_t> HugeClaim() {
    test::GgufBuilder b;
    b.AddString("general.architecture", "llama")
        .AddUint32("llama.context_length", 4096)
        .AddUint32("llama.embedding_length", 4096)
        .AddUint32("llama.feed_forward_length", 11008)
        .AddUint32("llama.block_count", 6)
        .AddUint32("llama.attention.head_count", 32)
        .AddUint32("llama.attention.head_count_kv", 32)
        .AddUint32("llama.vocab_size", 32000);
    return b.Build();
}

TEST(FaultModelFile, HugeClaimWithoutTensorsIsInvalidNotAnAllocation) {
    auto f = GgufFile::FromBytes(HugeClaim());
    ASSERT_TRUE(f.ok()) << f.status();
    auto c = ConfigFromGguf(**f);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_GT(WeightBytes(*c), 4ull << 30);
    auto w = LoadWeights(std::move(*f), *c);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << w.status();
    EXPECT_NE(std::string(w.status().message()).find("missing tensor 'token_embd.weight'"), std::string::npos)
        << w.status();
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Proves the order: in a child whose address space may grow by only 1 GiB,
// loading the 1 KB file must fail with the missing tensor, not by running
// out of memory (the old code threw std::bad_alloc here). Sanitizer runtimes
// reserve terabytes of address space, so this part runs in normal builds.
long VmSizeKib() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7));
    }
    return -1;
}

TEST(FaultModelFile, LoadingAHugeClaimAllocatesNothingBig) {
    const std::vector<uint8_t> bytes = HugeClaim();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const long vm = VmSizeKib();
        if (vm <= 0) _exit(3);
        const rlim_t limit = static_cast<rlim_t>(vm) * 1024 + (1ull << 30);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
        try {
            auto f = GgufFile::FromBytes(bytes);
            auto c = ConfigFromGguf(**f);
            auto w = LoadWeights(std::move(*f), *c);
            _exit(w.status().code() == absl::StatusCode::kInvalidArgument ? 0 : 1);
        } catch (...) {
            _exit(2);   // std::bad_alloc: it tried to allocate the claimed size
        }
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2 = allocation failed: the weights were allocated before the tensors were checked";
}
#endif

}  // namespace
}  // namespace prepack
