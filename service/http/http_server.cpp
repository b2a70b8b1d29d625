#include "http/http_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>

#include "convert.h"
#include "http/api_request_builder.h"
#include "http/generation.h"
#include "http/openai_response.h"
#include "request_builder.h"
#include "request_log.h"

namespace prepackd::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kJson = "application/json";

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void Send(httplib::Response& res, const grpc::Status& s, int http_status = 0) {
    const HttpError e = ToHttpError(s, http_status);
    res.status = e.status;
    if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
    if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
    res.set_content(Dump(e.body), kJson);
}

// Counts as a running call while a handler uses the engine outside a
// generation (the tokenizer), so the engine outlives it.
class CallScope {
public:
    explicit CallScope(EngineHost* host) : host_(host) { host_->CallStarted(); }
    ~CallScope() { host_->CallEnded(); }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

private:
    EngineHost* host_;
};

uint64_t RandomSeed() {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    std::lock_guard<std::mutex> lock(mu);
    return rng();
}

// Everything a generation request holds from parsing to its last byte
// (a streamed one outlives its handler: its content provider owns this).
struct Generation {
    Api                                           api = Api::kChat;
    ApiRequest                                    request;    // the prepared requests borrow its strings
    PreparedApiRequest                            prepared;   // its prompts for the engine
    std::unique_ptr<GenerationCall>               call;
    std::unique_ptr<Pieces>                       pieces;
    std::vector<Choice>                           choices;
    std::string                                   id;         // chatcmpl-... / cmpl-...
    int64_t                                       created = 0;
    std::string                                   model;

    bool chat() const { return api == Api::kChat; }
    int  n() const { return request.n; }
    // echo + logprobs: their log-probs arrive with the first generated token.
    bool scores_prompt() const { return request.scores_prompt(); }
    // Chat with tools the model may call: calls come as delta.tool_calls.
    bool calls_tools() const { return chat() && request.chat.tool_choice.active(); }

    void OnToken(int k, const prepack_event& ev) {
        Choice& c = choices[static_cast<size_t>(k)];
        c.text.append(ev.text, ev.text_len);
        if (ev.reasoning != nullptr) c.reasoning.append(ev.reasoning, ev.reasoning_len);
        if (scores_prompt() && c.logprobs.empty()) {
            c.logprobs = PromptLogprobs(prepared.FirstToken(static_cast<size_t>(k / n())), ev);
            c.prompt_logprobs = c.logprobs.size();
        }
        if (request.logprobs) c.logprobs.push_back(LogprobOf(ev));
    }
    void OnEnd(int k, const prepack_event& ev) { EndChoice(ev, &choices[static_cast<size_t>(k)]); }

    ResponseHead Head() const { return {id, created, model}; }
    Json Envelope(const char* object) const { return prepack::openai::Envelope(Head(), object); }
    // The non-streamed response.
    Json Response() { return prepack::openai::ResponseBody(request, Head(), choices, *pieces); }

    // One streamed chunk for one choice.
    Json Chunk(size_t k, Json delta_or_text, Json logprobs, Json finish) const {
        Json j = Envelope(chat() ? "chat.completion.chunk" : "text_completion");
        Json choice = Json::object();
        choice["index"] = k;
        choice[chat() ? "delta" : "text"] = std::move(delta_or_text);
        choice["logprobs"] = std::move(logprobs);
        choice["finish_reason"] = std::move(finish);
        j["choices"] = Json::array({std::move(choice)});
        if (request.include_usage) j["usage"] = nullptr;
        return j;
    }
};

std::string Event(const Json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace

grpc::Status SplitHostPort(const std::string& listen, std::string* host, int* port) {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 >= listen.size()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "--http-listen: \"" + listen + "\" is not HOST:PORT (or \"off\")");
    }
    std::string h = listen.substr(0, colon);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    const std::string p = listen.substr(colon + 1);
    if (p.find_first_not_of("0123456789") != std::string::npos || p.size() > 5 || std::stoi(p) > 65535) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "--http-listen: bad port \"" + p + "\"");
    }
    *host = h;
    *port = std::stoi(p);
    return grpc::Status::OK;
}

HttpServer::HttpServer(EngineHost* host, Authenticator auth, const ServerOptions& options)
    : host_(host),
      auth_(std::move(auth)),
      options_(options),
      model_id_(ServedModelId(options)),
      created_(static_cast<int64_t>(std::time(nullptr))) {}

HttpServer::~HttpServer() { Stop(); }

grpc::Status HttpServer::Start(std::string* address) {
    std::string host;
    int port = 0;
    if (grpc::Status s = SplitHostPort(options_.http_listen, &host, &port); !s.ok()) return s;
    TransportLimits limits;
    limits.max_threads = static_cast<size_t>(options_.http_threads > 0 ? options_.http_threads
                                                                       : options_.max_queue + 16);
    limits.max_body_bytes = static_cast<size_t>(options_.max_message_bytes);
    std::string error;
    transport_ = Transport::Make(options_.tls_cert, options_.tls_key, limits, &error);
    if (transport_ == nullptr) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error);
    Route();
    const int bound = transport_->Bind(host, port);
    if (bound <= 0) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "HTTP: cannot listen on " + options_.http_listen +
                                " (in use? pass --http-listen HOST:PORT, or off)");
    }
    transport_->Serve();
    const size_t colon = options_.http_listen.rfind(':');
    *address = options_.http_listen.substr(0, colon) + ":" + std::to_string(bound);
    return grpc::Status::OK;
}

void HttpServer::Stop() {
    if (transport_ != nullptr) transport_->Stop();
}

grpc::Status HttpServer::Authorize(const httplib::Request& req) const {
    if (!auth_.enabled()) return grpc::Status::OK;
    if (!req.has_header("Authorization")) return auth_.CheckValue(nullptr, "header");
    const std::string value = req.get_header_value("Authorization");
    const std::string_view v(value);
    return auth_.CheckValue(&v, "header");
}

void HttpServer::Route() {
    httplib::Server& s = transport_->server();
    s.Get("/health", [this](const httplib::Request& q, httplib::Response& r) { Health(q, r); });
    s.Get("/metrics", [this](const httplib::Request& q, httplib::Response& r) { Scrape(q, r); });
    s.Get("/v1/models", [this](const httplib::Request& q, httplib::Response& r) { Models(q, r); });
    s.Get("/v1/models/(.+)", [this](const httplib::Request& q, httplib::Response& r) { Model(q, r); });
    s.Post("/v1/chat/completions",
           [this](const httplib::Request& q, httplib::Response& r) { Generate(q, r, Api::kChat); });
    s.Post("/v1/completions",
           [this](const httplib::Request& q, httplib::Response& r) { Generate(q, r, Api::kCompletions); });
    s.Post("/tokenize", [this](const httplib::Request& q, httplib::Response& r) { Tokenize(q, r); });
    s.Post("/detokenize", [this](const httplib::Request& q, httplib::Response& r) { Detokenize(q, r); });
    s.Get("/get_server_info", [this](const httplib::Request& q, httplib::Response& r) { ServerInfo(q, r); });
    s.Get("/get_model_info", [this](const httplib::Request& q, httplib::Response& r) { ModelInfo(q, r); });
    s.Get("/v1/loads", [this](const httplib::Request& q, httplib::Response& r) { Loads(q, r); });
    // A body past the limit is refused from its Content-Length, before any
    // of it is read (httplib itself would read and drop it all first), and
    // before a client waiting on "Expect: 100-continue" sends it.
    auto too_large = [this](const httplib::Request& q, httplib::Response& r) {
        if (!q.has_header("Content-Length")) return false;
        if (q.get_header_value<uint64_t>("Content-Length") <= static_cast<uint64_t>(options_.max_message_bytes)) {
            return false;
        }
        r.status = 400;
        r.set_content(Dump(ErrorBody("body: larger than " + std::to_string(options_.max_message_bytes) +
                                         " bytes, the limit of a request (--max-message-bytes)",
                                     "invalid_request_error", "", "request_too_large")),
                      kJson);
        r.set_header("Connection", "close");
        CloseAfterResponse();
        return true;
    };
    s.set_pre_routing_handler([too_large](const httplib::Request& q, httplib::Response& r) {
        return too_large(q, r) ? httplib::Server::HandlerResponse::Handled
                               : httplib::Server::HandlerResponse::Unhandled;
    });
    s.set_expect_100_continue_handler(
        [too_large](const httplib::Request& q, httplib::Response& r) { return too_large(q, r) ? 400 : 100; });
    s.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& q, httplib::Response& r) { return OnError(q, r); }));
    s.set_exception_handler([](const httplib::Request&, httplib::Response& r, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        Send(r, grpc::Status(grpc::StatusCode::INTERNAL, "internal error: " + ToValidUtf8(what)));
    });
}

httplib::Server::HandlerResponse HttpServer::OnError(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;   // a handler's own error
    std::string message, type = "invalid_request_error", code;
    int status = res.status;
    if (status == 404) {
        static const std::vector<std::pair<std::string, std::string>> kRoutes = {
            {"/health", "GET"}, {"/metrics", "GET"}, {"/v1/models", "GET"}, {"/v1/chat/completions", "POST"},
            {"/v1/completions", "POST"}, {"/tokenize", "POST"}, {"/detokenize", "POST"},
            {"/get_server_info", "GET"}, {"/get_model_info", "GET"}, {"/v1/loads", "GET"}};
        for (const auto& [path, method] : kRoutes) {
            if (req.path == path) {
                status = 405;
                res.set_header("Allow", method);
                message = req.method + " is not allowed on " + path + " (use " + method + ")";
                break;
            }
        }
        if (status == 404) message = "Invalid URL (" + req.method + " " + ToValidUtf8(req.path) + ")";
    } else if (status == 413) {
        // The Content-Length alone said so: nothing was read.
        status = 400;
        code = "request_too_large";
        message = "body: larger than " + std::to_string(options_.max_message_bytes) +
                  " bytes, the limit of a request (--max-message-bytes)";
    } else if (status >= 500) {
        type = "server_error";
        message = "internal error";
    } else {
        message = "the request is not valid HTTP/1.1 that this server reads (status " + std::to_string(status) + ")";
    }
    res.status = status;
    res.set_content(Dump(ErrorBody(message, type, "", code)), kJson);
    return httplib::Server::HandlerResponse::Handled;
}

void HttpServer::Health(const httplib::Request&, httplib::Response& res) {
    if (grpc::Status s = host_->CheckServing(); !s.ok()) return Send(res, s);
    res.set_content(R"({"status":"ok"})", kJson);
}

void HttpServer::Scrape(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    prepack_stats st;
    prepack_stats_init(&st);
    if (prepack_status ps = prepack_engine_stats(host_->engine(), &st); ps != PREPACK_OK) {
        return Send(res, ToGrpc(ps, prepack_last_error()));
    }
    res.set_content(host_->metrics().Render(st), Metrics::kContentType);
}

Json HttpServer::ModelObject() const {
    Json m = Json::object();
    m["id"] = model_id_;
    m["object"] = "model";
    m["created"] = created_;
    m["owned_by"] = "prepack";
    m["max_model_len"] = host_->model().context_length;
    return m;
}

void HttpServer::Models(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    Json list = Json::object();
    list["object"] = "list";
    list["data"] = Json::array({ModelObject()});
    res.set_content(Dump(list), kJson);
}

void HttpServer::Model(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    const std::string id = req.matches.size() > 1 ? req.matches[1].str() : "";
    if (id != model_id_) {
        return Send(res, grpc::Status(grpc::StatusCode::NOT_FOUND,
                                      "model: \"" + ToValidUtf8(id) + "\" does not exist here; this server serves \"" +
                                          model_id_ + "\""));
    }
    res.set_content(Dump(ModelObject()), kJson);
}

void HttpServer::Generate(const httplib::Request& req, httplib::Response& res, Api api) {
    const auto received = Clock::now();
    const std::string rid = std::to_string(host_->NextRequestId());
    const char* rpc = api == Api::kChat ? "http:/v1/chat/completions" : "http:/v1/completions";
    auto refuse = [&](const grpc::Status& s) {
        LogRefusal(host_, rid, rpc, s, received);
        Send(res, s);
    };
    if (grpc::Status s = Authorize(req); !s.ok()) return refuse(s);
    if (grpc::Status s = host_->CheckServing(); !s.ok()) return refuse(s);

    auto g = std::make_shared<Generation>();
    g->api = api;
    Json body;
    if (grpc::Status s = ParseBody(req.body, &body); !s.ok()) return refuse(s);
    if (grpc::Status s = CheckModel(body, model_id_); !s.ok()) return refuse(s);
    if (grpc::Status s = ParseApiRequest(api, body, host_->model(), host_->max_queue(), &g->request); !s.ok()) {
        return refuse(s);
    }
    body = Json();   // the request holds what it needs
    ApiRequest& ar = g->request;

    // From here the engine is in use: a running call.
    g->call = std::make_unique<GenerationCall>(host_, rid, rpc, received, ConnectionSocket(req));
    GenerationCall& call = *g->call;
    auto fail = [&](const grpc::Status& s, int http_status = 0) {
        call.Finish(s);
        Send(res, s, http_status);
    };
    if (!call.TakeSlots(ar.choices())) return fail(host_->QueueFull(false));

    // The same building as gRPC's Generate: checks, tokenizing or chat
    // rendering, the context check.
    const prepack_model_desc& model = host_->model();
    if (grpc::Status s = PrepareApiRequest(ar, host_->engine(), model, host_->max_prompt_bytes(),
                                           std::chrono::system_clock::time_point::max(), &g->prepared);
        !s.ok()) {
        return fail(s);
    }
    call.record().prompt_tokens = g->prepared.prompt_tokens;

    // One engine request per choice (a seed of its own when none is given
    // and sampling is random).
    const std::vector<prepack_request> requests = g->prepared.Choices(ar.n, ar.seed ? *ar.seed : RandomSeed());
    if (grpc::Status s = call.Start(requests); !s.ok()) {
        // The engine plans tool calls here: its errors for a tool get the body's names.
        if (api == Api::kChat) s = WithJsonNames(s, api, -1);
        // RESOURCE_EXHAUSTED here: the prompt can never fit the KV budget (no retry helps).
        return fail(s, s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ? 400 : 0);
    }
    g->choices.resize(requests.size());
    g->pieces = std::make_unique<Pieces>(EnginePieces(host_->engine()));
    g->id = NewId(api == Api::kChat ? "chatcmpl-" : "cmpl-");
    g->created = static_cast<int64_t>(std::time(nullptr));
    g->model = model_id_;
    for (size_t k = 0; k < g->choices.size(); ++k) {
        if (ar.echo) g->choices[k].text = g->prepared.echo[k / static_cast<size_t>(ar.n)];
    }

    if (!ar.stream) {
        const grpc::Status s = call.Run(
            [&](int k, const prepack_event& ev) {
                g->OnToken(k, ev);
                return true;
            },
            [&](int k, const prepack_event& ev) {
                g->OnEnd(k, ev);
                return true;
            });
        if (!s.ok()) return fail(s);
        res.set_content(Dump(g->Response()), kJson);
        call.Finish(grpc::Status::OK);
        return;
    }

    // Streamed: headers now, then an event per token from the content
    // provider, which runs on this thread once the handler has returned.
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    // Exactly "text/event-stream": httplib never compresses that type.
    res.set_chunked_content_provider("text/event-stream", [g](size_t, httplib::DataSink& sink) {
        auto write = [&sink](const std::string& bytes) { return sink.write(bytes.data(), bytes.size()); };
        GenerationCall& call = *g->call;
        // Each choice opens with the role (chat) or the echoed prompt.
        for (size_t k = 0; k < g->choices.size(); ++k) {
            Json first;
            if (g->chat()) {
                // With tools, content stays null until there is some: an
                // answer of calls alone then adds up (in the SDK's stream
                // helper) to the non-streamed message, content null.
                first = Json::object({{"role", "assistant"}, {"content", g->calls_tools() ? Json(nullptr) : Json("")}});
            } else if (g->request.echo && !g->scores_prompt()) {
                first = g->choices[k].text;
            } else {   // (an echo with log-probs waits for them: the first token brings them)
                continue;
            }
            if (!write(Event(g->Chunk(k, std::move(first), nullptr, nullptr)))) {
                call.Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client disconnected"));
                return false;
            }
        }
        const grpc::Status s = call.Run(
            [&](int k, const prepack_event& ev) {
                g->OnToken(k, ev);
                const size_t i = static_cast<size_t>(k);
                Choice& c = g->choices[i];
                if (g->scores_prompt() && c.logprobs.size() == c.prompt_logprobs + 1) {
                    // The echoed prompt and its log-probs, before this first token.
                    const std::vector<TokenLogprob> prompt(c.logprobs.begin(), c.logprobs.end() - 1);
                    Json echoed = g->prepared.echo[i / static_cast<size_t>(g->n())];
                    Json lp = CompletionLogprobs(prompt, *g->pieces, &c.offset);
                    if (!write(Event(g->Chunk(i, std::move(echoed), std::move(lp), nullptr)))) return false;
                }
                const std::string_view text(ev.text, ev.text_len);
                const std::string_view reasoning(ev.reasoning != nullptr ? ev.reasoning : "",
                                                 ev.reasoning != nullptr ? ev.reasoning_len : 0);
                const std::vector<prepack::openai::ToolCallDelta> calls = ToolCallDeltas(ev);
                // A token whose text is held back (a stop string may be
                // starting, a character is incomplete, it is call markup)
                // has nothing to send, unless its log-prob is asked for.
                if (text.empty() && reasoning.empty() && calls.empty() && !g->request.logprobs) return true;
                Json logprobs = nullptr;
                if (g->request.logprobs) {
                    const std::vector<TokenLogprob> one = {g->choices[i].logprobs.back()};
                    logprobs = g->chat() ? ChatLogprobs(one, *g->pieces)
                                         : CompletionLogprobs(one, *g->pieces, &g->choices[i].offset);
                }
                Json delta;
                if (g->chat()) {
                    delta = Json::object();
                    if (!reasoning.empty()) delta["reasoning_content"] = ToValidUtf8(reasoning);
                    // ("" would make a null content "" in a client that adds deltas up.)
                    if (!text.empty() || (reasoning.empty() && !g->calls_tools())) {
                        delta["content"] = ToValidUtf8(text);
                    }
                    if (!calls.empty()) delta["tool_calls"] = prepack::openai::ToolCallDeltasJson(calls);
                } else {
                    delta = ToValidUtf8(text);
                }
                return write(Event(g->Chunk(i, std::move(delta), std::move(logprobs), nullptr)));
            },
            [&](int k, const prepack_event& ev) {
                g->OnEnd(k, ev);
                const size_t i = static_cast<size_t>(k);
                Json last = g->chat() ? Json::object() : Json("");
                const char* finish = prepack::openai::ChoiceFinishReason(g->choices[i]);
                return write(Event(g->Chunk(i, std::move(last), nullptr, finish)));
            });
        if (s.ok()) {
            bool ok = true;
            if (g->request.include_usage) {
                Json j = g->Envelope(g->chat() ? "chat.completion.chunk" : "text_completion");
                j["choices"] = Json::array();
                j["usage"] = UsageJson(prepack::openai::SumUsage(g->choices, g->n()));
                ok = write(Event(j));
            }
            ok = ok && write("data: [DONE]\n\n");
            call.Finish(ok ? s : grpc::Status(grpc::StatusCode::CANCELLED, "the client disconnected"));
            if (ok) sink.done();
            return ok;
        }
        call.Finish(s);
        if (s.error_code() == grpc::StatusCode::CANCELLED) return false;   // nobody to tell
        // An error once the stream has begun: an error event, then the end.
        write(Event(ToHttpError(s).body));
        sink.done();
        return true;
    });
}

void HttpServer::Tokenize(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    Json body;
    TokenizeRequest tr;
    if (grpc::Status s = ParseBody(req.body, &body); !s.ok()) return Send(res, s);
    if (grpc::Status s = ParseTokenize(body, model_id_, &tr); !s.ok()) return Send(res, s);
    CallScope scope(host_);
    std::vector<int32_t> ids;
    if (!tr.chat) {
        // Text that long is no prompt for this model; refusing it bounds the work.
        if (grpc::Status s = CheckPromptBytes(tr.text.size(), "prompt", host_->max_prompt_bytes()); !s.ok()) {
            return Send(res, s);
        }
        if (grpc::Status s = TokenizeText(host_->engine(), tr.text, tr.add_special, tr.parse_special, &ids); !s.ok()) {
            return Send(res, s);
        }
    } else {
        grpc::Status s = CheckConversation(tr.conversation, "messages", host_->max_prompt_bytes());
        PreparedChat chat;
        if (s.ok()) s = BuildChat(tr.conversation, "messages", &chat);
        if (s.ok()) s = RenderChat(host_->engine(), chat, "messages", nullptr, &ids);
        if (!s.ok()) return Send(res, WithJsonNames(s, Api::kChat, -1));
    }
    Json out = Json::object();
    out["count"] = ids.size();
    out["max_model_len"] = host_->model().context_length;
    out["tokens"] = ids;
    res.set_content(Dump(out), kJson);
}

void HttpServer::Detokenize(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    Json body;
    std::vector<int32_t> ids;
    if (grpc::Status s = ParseBody(req.body, &body); !s.ok()) return Send(res, s);
    if (grpc::Status s = ParseDetokenize(body, model_id_, host_->model(), &ids); !s.ok()) return Send(res, s);
    CallScope scope(host_);
    std::string text;
    if (grpc::Status s = DetokenizeIds(host_->engine(), ids, &text); !s.ok()) return Send(res, s);
    Json out = Json::object();
    out["prompt"] = text;
    res.set_content(Dump(out), kJson);
}

// The worker endpoints of SGLang's HTTP server that a router in front of
// replicas reads (smg: metadata once, when it registers a worker; the load
// every --load-monitor-interval). Served under SGLang's older names
// /get_server_info and /get_model_info, which SGLang still answers and smg
// falls back to, and not /server_info: smg takes that as the mark of an
// SGLang worker, and prepackd is not one (smg registers it as a generic
// OpenAI-compatible worker). Only what prepackd knows is reported; fields
// it has no counterpart for are left out, never invented.
void HttpServer::ServerInfo(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    Json j = Json::object();
    j["model_path"] = ToValidUtf8(options_.model);
    j["served_model_name"] = model_id_;
    j["context_length"] = host_->model().context_length;
    j["max_running_requests"] = options_.max_running;   // sequences decoding at once
    j["max_queued_requests"] = host_->max_queue();      // running or waiting before 429
    j["tp_size"] = 1;                                   // one process, one engine
    j["dp_size"] = 1;
    j["is_embedding"] = false;
    j["version"] = prepack_version();
    res.set_content(Dump(j), kJson);
}

void HttpServer::ModelInfo(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    Json j = Json::object();
    j["model_path"] = ToValidUtf8(options_.model);
    j["is_generation"] = true;
    j["model_type"] = host_->model().architecture;   // the GGUF's general.architecture
    j["has_image_understanding"] = false;
    j["has_audio_understanding"] = false;
    res.set_content(Dump(j), kJson);
}

// SGLang's /v1/loads with its "core" section, one rank (the `include`
// query is accepted and the other sections are absent): the engine's
// running and waiting requests, the share of the KV budget requests hold,
// the prefix cache's hit rate since start, from the same snapshot as
// /metrics and GetStats.
void HttpServer::Loads(const httplib::Request& req, httplib::Response& res) {
    if (grpc::Status s = Authorize(req); !s.ok()) return Send(res, s);
    if (grpc::Status s = host_->CheckLoaded(); !s.ok()) return Send(res, s);
    prepack_stats st;
    prepack_stats_init(&st);
    if (prepack_status ps = prepack_engine_stats(host_->engine(), &st); ps != PREPACK_OK) {
        return Send(res, ToGrpc(ps, prepack_last_error()));
    }
    Json load = Json::object();
    load["dp_rank"] = 0;
    load["num_running_reqs"] = st.requests_running;
    load["num_waiting_reqs"] = st.requests_waiting;
    load["num_total_reqs"] = st.requests_running + st.requests_waiting;
    load["token_usage"] = st.kv_bytes_total > 0 ? static_cast<double>(st.kv_bytes_used) / st.kv_bytes_total : 0.0;
    load["cache_hit_rate"] =
        st.prefix_query_tokens > 0 ? static_cast<double>(st.prefix_hit_tokens) / st.prefix_query_tokens : 0.0;
    load["max_running_requests"] = options_.max_running;
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
    Json j = Json::object();
    j["timestamp"] = when;
    j["version"] = prepack_version();
    j["dp_rank_count"] = 1;
    j["loads"] = Json::array({std::move(load)});
    res.set_content(Dump(j), kJson);
}

}  // namespace prepackd::http
