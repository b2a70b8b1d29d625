// Token auth (--auth-token-file): server reflection needs the token like
// every Prepack call (gRPC's reflection plugin answered anyone; prepackd
// serves reflection itself), health stays open, and the scheme of
// "authorization: Bearer <token>" is case-insensitive (RFC 7235).
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.pb.h>

#include <fstream>
#include <set>

#include "client_util.h"
#include "reflection_versions.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

const std::string kToken = "s3cret-token";

// What one reflection request on a fresh stream answers: the status of the
// stream and, when it answered, the response.
template <typename Reflection>
grpc::Status Reflect(const std::shared_ptr<grpc::Channel>& channel, const typename Reflection::Request& request,
                     const std::string& authorization, typename Reflection::Response* response) {
    auto stub = Reflection::Service::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(10)));
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    auto stream = stub->ServerReflectionInfo(&ctx);
    stream->Write(request);
    stream->WritesDone();
    typename Reflection::Response r;
    bool got = false;
    while (stream->Read(&r)) {
        *response = r;
        got = true;
    }
    const grpc::Status s = stream->Finish();
    if (s.ok() && !got) return grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended without an answer");
    return s;
}

using prepackd::ReflectionV1;
using prepackd::ReflectionV1alpha;

template <typename T>
class ReflectionAuthTest : public ::testing::Test {};
using Versions = ::testing::Types<ReflectionV1, ReflectionV1alpha>;
TYPED_TEST_SUITE(ReflectionAuthTest, Versions);

std::string WriteToken(const TempPath& path) {
    std::ofstream(path.path()) << kToken << "\n";
    return path.path();
}

TYPED_TEST(ReflectionAuthTest, ReflectionNeedsTheTokenWhenAuthIsOn) {
    TempPath token_file("auth_token");
    auto server = StartTiny({"--auth-token-file", WriteToken(token_file)});
    ASSERT_NE(server, nullptr);
    auto channel = server->Channel();
    typename TypeParam::Request list;
    list.set_list_services("");
    typename TypeParam::Response r;

    EXPECT_EQ(Reflect<TypeParam>(channel, list, "", &r).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Reflect<TypeParam>(channel, list, "Bearer wrong", &r).error_code(), grpc::StatusCode::UNAUTHENTICATED);

    ASSERT_TRUE(Reflect<TypeParam>(channel, list, "Bearer " + kToken, &r).ok());
    std::set<std::string> names;
    for (const auto& s : r.list_services_response().service()) names.insert(s.name());
    for (const char* want : {"prepack.v1.Prepack", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                             "grpc.reflection.v1alpha.ServerReflection"}) {
        EXPECT_EQ(names.count(want), 1u) << want;
    }
    // A symbol's file, with its dependencies, for a client that builds stubs.
    typename TypeParam::Request symbol;
    symbol.set_file_containing_symbol("prepack.v1.Prepack.Generate");
    ASSERT_TRUE(Reflect<TypeParam>(channel, symbol, "bearer " + kToken, &r).ok());
    ASSERT_GE(r.file_descriptor_response().file_descriptor_proto_size(), 1);
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(r.file_descriptor_response().file_descriptor_proto(0)));
    EXPECT_EQ(file.name(), "prepack/v1/prepack.proto");
    EXPECT_EQ(file.package(), "prepack.v1");
    // An unknown symbol is an error inside the stream, as gRPC's own does it.
    symbol.set_file_containing_symbol("no.such.Symbol");
    ASSERT_TRUE(Reflect<TypeParam>(channel, symbol, "Bearer " + kToken, &r).ok());
    EXPECT_EQ(r.error_response().error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
    // Health still needs no token.
    EXPECT_EQ(HealthOf(channel), grpc::health::v1::HealthCheckResponse::SERVING);
}

TYPED_TEST(ReflectionAuthTest, ReflectionIsOpenWithoutAuth) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    typename TypeParam::Request list;
    list.set_list_services("");
    typename TypeParam::Response r;
    ASSERT_TRUE(Reflect<TypeParam>(server->Channel(), list, "", &r).ok());
    EXPECT_GE(r.list_services_response().service_size(), 4);
}

grpc::StatusCode StatsWith(prepack::v1::Prepack::Stub& stub, const std::string& authorization) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(10)));
    ctx.AddMetadata("authorization", authorization);
    prepack::v1::Stats stats;
    return stub.GetStats(&ctx, prepack::v1::GetStatsRequest(), &stats).error_code();
}

TEST(AuthTest, TheSchemeIsCaseInsensitive) {
    TempPath token_file("auth_token");
    auto server = StartTiny({"--auth-token-file", WriteToken(token_file)});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    for (const std::string scheme : {"Bearer", "bearer", "BEARER", "bEaReR"}) {
        EXPECT_EQ(StatsWith(*stub, scheme + " " + kToken), grpc::StatusCode::OK) << scheme;
    }
    // The token itself is compared exactly; other schemes and run-together
    // values are refused.
    const std::vector<std::string> refused = {"Bearer S3CRET-TOKEN", "Basic " + kToken, "Bearer" + kToken,
                                              kToken, "Bearer ", "Bearer  wrong"};
    for (const std::string& bad : refused) {
        EXPECT_EQ(StatsWith(*stub, bad), grpc::StatusCode::UNAUTHENTICATED) << bad;
    }
    // Generate goes through the same check.
    prepack::v1::GenerateRequest r = Greedy("hello", 2);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(30)));
    ctx.AddMetadata("authorization", "BEARER " + kToken);
    auto reader = stub->Generate(&ctx, r);
    prepack::v1::GenerateResponse msg;
    while (reader->Read(&msg)) {
    }
    EXPECT_TRUE(reader->Finish().ok());
}

}  // namespace
}  // namespace prepackd_test
