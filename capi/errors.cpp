// Errors and versions: prepack_status names, the thread-local last error,
// and what the exception guard and the status conversion need.
#include "capi/capi_internal.h"

namespace prepack::capi {

namespace {

// exit() destroys the calling thread's thread_local objects before it runs
// atexit handlers, and a C program may well free its engine from one: the
// message must outlive its own destructor there. The flag is trivially
// destructible, so it stays readable after the thread's destructors ran.
thread_local bool message_destroyed = false;

struct Message {
    std::string text;
    ~Message() { message_destroyed = true; }
};

}  // namespace

std::string& LastError() {
    thread_local Message message;
    if (!message_destroyed) return message.text;
    // Only a thread already exiting gets here; its last few calls share a
    // string that is never freed (the process is ending).
    thread_local std::string* after_exit = new std::string();
    return *after_exit;
}

prepack_status Fail(prepack_status code, std::string message) {
    LastError() = std::move(message);
    return code;
}

prepack_status FromStatus(const absl::Status& s) {
    if (s.ok()) return PREPACK_OK;
    return Fail(static_cast<prepack_status>(s.code()), std::string(s.message()));
}

char* CopyString(const std::string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p == nullptr) throw std::bad_alloc();
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
    return p;
}

}  // namespace prepack::capi

using namespace prepack::capi;

extern "C" {

const char* prepack_version(void) { return PREPACK_VERSION_STRING; }
int prepack_abi_version(void) { return PREPACK_ABI_VERSION; }

const char* prepack_status_str(prepack_status status) {
    switch (status) {
        case PREPACK_OK: return "OK";
        case PREPACK_CANCELLED: return "CANCELLED";
        case PREPACK_UNKNOWN: return "UNKNOWN";
        case PREPACK_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case PREPACK_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
        case PREPACK_NOT_FOUND: return "NOT_FOUND";
        case PREPACK_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
        case PREPACK_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
        case PREPACK_OUT_OF_RANGE: return "OUT_OF_RANGE";
        case PREPACK_UNIMPLEMENTED: return "UNIMPLEMENTED";
        case PREPACK_INTERNAL: return "INTERNAL";
        case PREPACK_UNAVAILABLE: return "UNAVAILABLE";
        case PREPACK_DATA_LOSS: return "DATA_LOSS";
    }
    return "UNKNOWN_STATUS_CODE";
}

const char* prepack_last_error(void) { return LastError().c_str(); }

}  // extern "C"
