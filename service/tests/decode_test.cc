// Requests that are not valid protobuf for their method: invalid UTF-8 in a
// proto3 string field, truncated fields, garbage. gRPC's generated handlers
// answer those UNIMPLEMENTED with no message and no handler ever sees them;
// prepackd decodes them itself and answers INVALID_ARGUMENT naming the
// problem, logs them and counts them. Sent as raw bytes (GenericStub), since
// a generated client refuses to serialize invalid UTF-8 in the first place.
#include <gtest/gtest.h>

#include "client_util.h"
#include "prepack/v1/prepack.pb.h"
#include "request_decoder.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

const std::string kBadUtf8 = "\xc3\x28";   // a lead byte, then no continuation

// `message` serialized, with every "@@" replaced by kBadUtf8 (same length,
// so the framing stays right).
std::string Poisoned(const google::protobuf::Message& message) {
    std::string wire = message.SerializeAsString();
    for (size_t at = wire.find("@@"); at != std::string::npos; at = wire.find("@@", at)) wire.replace(at, 2, kBadUtf8);
    return wire;
}

TEST(DiagnoseWireTest, NamesTheFieldWithInvalidUtf8) {
    prepack::v1::GenerateBatchRequest batch;
    *batch.add_requests() = Greedy("fine", 4);
    *batch.add_requests() = Greedy("fine too", 4);
    batch.add_requests()->mutable_sampling()->add_stop("ok");
    batch.mutable_requests(2)->mutable_sampling()->add_stop("x@@y");
    const std::string why = prepackd::DiagnoseWire(batch.GetDescriptor(), Poisoned(batch));
    EXPECT_EQ(why.rfind("requests[2].sampling.stop[1]: invalid UTF-8 at byte 1 of the field", 0), 0u) << why;

    const std::string text = prepackd::DiagnoseWire(prepack::v1::GenerateRequest::descriptor(),
                                                    Poisoned(Greedy("ab@@", 4)));
    EXPECT_EQ(text.rfind("text: invalid UTF-8 at byte 2 of the field", 0), 0u) << text;
}

TEST(DiagnoseWireTest, NamesMalformedFraming) {
    const auto* type = prepack::v1::GenerateRequest::descriptor();
    // Field 1 (text) announces 16 bytes; 3 follow.
    EXPECT_EQ(prepackd::DiagnoseWire(type, std::string("\x0a\x10" "abc", 5)).rfind("text: 16 bytes announced, 3 left", 0),
              0u);
    // Wire type 7 does not exist.
    EXPECT_EQ(prepackd::DiagnoseWire(type, "\x0f").rfind("request: not protobuf (wire type 7 at byte 0)", 0), 0u);
    // A varint that never ends.
    EXPECT_NE(prepackd::DiagnoseWire(type, std::string("\x30\xff\xff", 3)).find("truncated"), std::string::npos);
    // Garbage whose first varint never ends.
    EXPECT_EQ(prepackd::DiagnoseWire(type, "\xff\xff\xff\xff").rfind("request: not protobuf", 0), 0u)
        << prepackd::DiagnoseWire(type, "\xff\xff\xff\xff");
    // Valid bytes: nothing to report.
    EXPECT_EQ(prepackd::DiagnoseWire(type, Greedy("hello", 4).SerializeAsString()), "");
}

TEST(DecodeTest, UndecodableRequestsAreInvalidArgumentLoggedAndCounted) {
    TempPath log("decode_log");
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1"}, &error,
                                       std::chrono::seconds(60), log.path());
    ASSERT_NE(server, nullptr) << error;
    ASSERT_TRUE(WaitUntilServing(server->Channel()));
    auto channel = server->Channel();

    prepack::v1::GenerateBatchRequest batch;
    *batch.add_requests() = Greedy("fine", 4);
    *batch.add_requests() = Greedy("bad @@ text", 4);
    prepack::v1::TokenizeRequest tokenize;
    tokenize.set_text("@@");
    struct Case {
        const char* method;
        const char* rpc;          // as the request log names it
        std::string request;
        const char* message_starts;
    };
    const std::vector<Case> cases = {
        {"/prepack.v1.Prepack/Generate", "Generate", Poisoned(Greedy("x@@", 4)), "text: invalid UTF-8"},
        {"/prepack.v1.Prepack/GenerateBatch", "GenerateBatch", Poisoned(batch), "requests[1].text: invalid UTF-8"},
        {"/prepack.v1.Prepack/Tokenize", "Tokenize", Poisoned(tokenize), "text: invalid UTF-8"},
        {"/prepack.v1.Prepack/Generate", "Generate", std::string("\x0a\x10" "abc", 5), "text: 16 bytes announced"},
        {"/prepack.v1.Prepack/Generate", "Generate", "\xff\xff\xff\xff", "request: not protobuf"},
        {"/prepack.v1.Prepack/GetStats", "GetStats", "\x0f\x01", "request: not protobuf"},
        {"/prepack.v1.Prepack/Detokenize", "Detokenize", "\x0a\x7f", "token_ids"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.method + std::string(" ") + c.message_starts);
        std::vector<std::string> responses;
        const grpc::Status s = RawCall(channel, c.method, c.request, &responses);
        EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
        EXPECT_EQ(s.error_message().rfind(c.message_starts, 0), 0u) << s.error_message();
        EXPECT_TRUE(responses.empty());
    }
    // Each one is in the request log, under its method, with its message.
    for (const Case& c : cases) {
        const auto lines = GrepLines(log.path(), {std::string("rpc=") + c.rpc + " ", "status=INVALID_ARGUMENT",
                                                  std::string("message=\"") + c.message_starts});
        EXPECT_FALSE(lines.empty()) << "no log line for " << c.rpc << " / " << c.message_starts;
    }
    // ... and counted.
    auto stub = prepack::v1::Prepack::NewStub(channel);
    const auto stats = Stats(*stub);
    ASSERT_EQ(stats.finished_by_status().count("INVALID_ARGUMENT"), 1u);
    EXPECT_EQ(stats.finished_by_status().at("INVALID_ARGUMENT"), cases.size());
    // A valid request, sent the same raw way, still works.
    std::vector<std::string> responses;
    prepack::v1::GenerateRequest ok = Greedy("hello", 4);
    ok.mutable_sampling()->set_ignore_eos(true);
    const grpc::Status s = RawCall(channel, "/prepack.v1.Prepack/Generate", ok.SerializeAsString(), &responses);
    EXPECT_TRUE(s.ok()) << s.error_message();
    int tokens = 0;
    for (const std::string& r : responses) {
        prepack::v1::GenerateResponse msg;
        ASSERT_TRUE(msg.ParseFromString(r));
        tokens += msg.token_ids_size();
    }
    EXPECT_EQ(tokens, 4);
}

}  // namespace
}  // namespace prepackd_test
