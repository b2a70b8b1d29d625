// libFuzzer target: the service's request path. The input is the wire bytes
// of a prepack.v1.GenerateRequest, as a gRPC client would send them. Bytes
// that parse go through PrepareRequest (service/request_builder.h), the
// validation prepackd runs before anything reaches the engine, first with no
// deadline and then with one that already passed; a request it accepts is
// submitted to a synthetic:tiny engine through the C ABI, as the Generate
// handler does, and its first token or two are read.
//
// Checked beyond "no crash": an accepted request fits the context, its ids
// are inside the vocabulary, and the expired deadline is always refused.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <google/protobuf/stubs/logging.h>

#include "fuzz/fuzz_input.h"
#include "prepack/v1/prepack.pb.h"
#include "prompt_limit.h"
#include "request_builder.h"

namespace {

[[noreturn]] void Fail(const char* what) {
    std::fprintf(stderr, "fuzz_service_request: %s\n", what);
    std::abort();
}

const prepack_model_desc& Model() {
    static const prepack_model_desc desc = [] {
        prepack_model_desc d;
        prepack_model_desc_init(&d);
        if (prepack_model_info(prepack_fuzz::SharedEngine(), &d) != PREPACK_OK) Fail("prepack_model_info failed");
        return d;
    }();
    return desc;
}

// The byte limit prepackd derives from the model (service/prompt_limit.h).
uint64_t MaxPromptBytes() {
    static const uint64_t limit = prepackd::DerivedPromptByteLimit(prepack_fuzz::SharedEngine(), Model());
    return limit;
}

}  // namespace

// Protobuf logs every string field with invalid UTF-8 it refuses to parse;
// that is the expected outcome for most inputs, not news.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    prepack::v1::GenerateRequest in;
    if (!in.ParseFromArray(data, static_cast<int>(size))) return 0;
    prepack_engine* engine = prepack_fuzz::SharedEngine();
    const prepack_model_desc& model = Model();

    {
        prepackd::PreparedRequest late;
        const auto past = std::chrono::system_clock::now() - std::chrono::milliseconds(1);
        if (prepackd::PrepareRequest(in, "", engine, model, MaxPromptBytes(), past, &late).ok()) Fail("an expired deadline was accepted");
    }

    prepackd::PreparedRequest out;
    const grpc::Status s =
        prepackd::PrepareRequest(in, "", engine, model, MaxPromptBytes(), std::chrono::system_clock::time_point::max(),
                                 &out);
    if (!s.ok()) {
        if (s.error_message().empty()) Fail("an error without a message");
        return 0;
    }
    if (in.has_text() && in.text().size() > MaxPromptBytes()) Fail("accepted a prompt over the byte limit");
    const prepack_request& r = out.request;
    if (r.n_prompt_tokens == 0 || r.prompt_tokens == nullptr) Fail("accepted an empty prompt");
    if (static_cast<int64_t>(r.n_prompt_tokens) + r.max_tokens > model.context_length) Fail("accepted past the context");
    for (size_t i = 0; i < r.n_prompt_tokens; ++i) {
        if (r.prompt_tokens[i] < 0 || r.prompt_tokens[i] >= model.vocab_size) Fail("accepted an id outside the vocabulary");
    }
    prepack_stream* stream = nullptr;
    if (prepack_generate_start(engine, &r, &stream) == PREPACK_OK) prepack_fuzz::ReadAFewThenDestroy(stream, 2, false);
    return 0;
}
