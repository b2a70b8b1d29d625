#include "reflection_service.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <set>

#include "reflection_versions.h"

namespace prepackd {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

using V1 = ReflectionV1;
using V1alpha = ReflectionV1alpha;

// One ServerReflectionInfo stream: an answer per request, one operation in
// flight at a time.
template <typename V>
class ReflectionReactor final : public grpc::ServerBidiReactor<typename V::Request, typename V::Response> {
public:
    ReflectionReactor(const std::vector<std::string>* services, const grpc::Status& refused) : services_(services) {
        if (!refused.ok()) {
            this->Finish(refused);
            return;
        }
        this->StartRead(&request_);
    }

private:
    using Request = typename V::Request;
    using Response = typename V::Response;

    void OnReadDone(bool ok) override {
        if (!ok) {   // the client has no more requests
            this->Finish(grpc::Status::OK);
            return;
        }
        response_.Clear();
        Answer();
        this->StartWrite(&response_);
    }
    void OnWriteDone(bool ok) override {
        if (!ok) {
            this->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the reflection stream broke"));
            return;
        }
        this->StartRead(&request_);
    }
    void OnDone() override { delete this; }

    void Error(grpc::StatusCode code, const std::string& message) {
        response_.mutable_error_response()->set_error_code(code);
        response_.mutable_error_response()->set_error_message(message);
    }

    // `file` and every file it depends on, each once: a client needs them
    // all to build the descriptors.
    void AddFile(const FileDescriptor* file, std::set<std::string>* sent) {
        if (!sent->insert(file->name()).second) return;
        google::protobuf::FileDescriptorProto proto;
        file->CopyTo(&proto);
        proto.SerializeToString(response_.mutable_file_descriptor_response()->add_file_descriptor_proto());
        for (int i = 0; i < file->dependency_count(); ++i) AddFile(file->dependency(i), sent);
    }
    void SendFile(const FileDescriptor* file, const std::string& what) {
        if (file == nullptr) return Error(grpc::StatusCode::NOT_FOUND, what + " not found");
        std::set<std::string> sent;
        AddFile(file, &sent);
    }

    void Answer() {
        const DescriptorPool* pool = DescriptorPool::generated_pool();
        response_.set_valid_host(request_.host());
        *response_.mutable_original_request() = request_;
        switch (request_.message_request_case()) {
            case Request::kFileByFilename:
                return SendFile(pool->FindFileByName(request_.file_by_filename()),
                                "file " + request_.file_by_filename());
            case Request::kFileContainingSymbol:
                return SendFile(pool->FindFileContainingSymbol(request_.file_containing_symbol()),
                                "symbol " + request_.file_containing_symbol());
            case Request::kFileContainingExtension: {
                const auto& ext = request_.file_containing_extension();
                const auto* type = pool->FindMessageTypeByName(ext.containing_type());
                const auto* field = type ? pool->FindExtensionByNumber(type, ext.extension_number()) : nullptr;
                return SendFile(field ? field->file() : nullptr, "extension " + std::to_string(ext.extension_number()) +
                                                                     " of " + ext.containing_type());
            }
            case Request::kAllExtensionNumbersOfType: {
                const auto* type = pool->FindMessageTypeByName(request_.all_extension_numbers_of_type());
                if (type == nullptr) {
                    return Error(grpc::StatusCode::NOT_FOUND, "type " + request_.all_extension_numbers_of_type() +
                                                                  " not found");
                }
                std::vector<const google::protobuf::FieldDescriptor*> fields;
                pool->FindAllExtensions(type, &fields);
                auto* r = response_.mutable_all_extension_numbers_response();
                r->set_base_type_name(type->full_name());
                for (const auto* f : fields) r->add_extension_number(f->number());
                return;
            }
            case Request::kListServices:
                for (const std::string& name : *services_) {
                    response_.mutable_list_services_response()->add_service()->set_name(name);
                }
                return;
            case Request::MESSAGE_REQUEST_NOT_SET: break;
        }
        Error(grpc::StatusCode::UNIMPLEMENTED, "unknown reflection request");
    }

    const std::vector<std::string>* const services_;
    Request                               request_;
    Response                              response_;
};

template <typename V>
class ReflectionService final : public V::Service::CallbackService {
public:
    ReflectionService(const Authenticator& auth, const std::vector<std::string>& services)
        : auth_(auth), services_(services) {}

    grpc::ServerBidiReactor<typename V::Request, typename V::Response>* ServerReflectionInfo(
        grpc::CallbackServerContext* context) override {
        return new ReflectionReactor<V>(&services_, auth_.Check(context));
    }

private:
    const Authenticator            auth_;
    const std::vector<std::string> services_;
};

}  // namespace

std::vector<std::unique_ptr<grpc::Service>> MakeReflectionServices(const Authenticator& auth,
                                                                   std::vector<std::string> services) {
    services.push_back(V1::Service::service_full_name());
    services.push_back(V1alpha::Service::service_full_name());
    std::vector<std::unique_ptr<grpc::Service>> out;
    out.push_back(std::make_unique<ReflectionService<V1>>(auth, services));
    out.push_back(std::make_unique<ReflectionService<V1alpha>>(auth, services));
    return out;
}

}  // namespace prepackd
