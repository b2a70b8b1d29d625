/*
** prepack.h: the C interface to the prepack inference engine.
**
** This header is the contract. Anything not declared here is not part of
** the published interface and may change without notice. It is plain C11
** (and compiles as C++); the library behind it is libprepack.so.<major>,
** exporting only prepack_* symbols.
**
** OBJECTS
**   prepack_engine   one model, its KV cache and a scheduler thread. Create
**                    with prepack_engine_create(), free with
**                    prepack_engine_destroy(). One engine serves any number
**                    of threads; their requests are batched together.
**   prepack_stream   one request's stream of events. Create with
**                    prepack_generate_start(), read with
**                    prepack_stream_next(), free with prepack_stream_destroy().
**
** ERRORS
**   Every function that can fail returns a prepack_status. Its values are the
**   google.rpc.Code numbers (the gRPC status codes). On failure,
**   prepack_last_error() returns a message naming the problem; it is
**   thread-local, so it describes the last failed call of the calling thread.
**   No function aborts the process on bad input and no C++ exception ever
**   crosses this interface: NULL or invalid arguments give
**   PREPACK_INVALID_ARGUMENT. Unless stated otherwise, a failed call leaves
**   its output arguments untouched and allocates nothing.
**
** EVOLUTION
**   Option and request structs begin with `size_t struct_size`, which the
**   *_init() functions set. Fields are only ever appended, so a program
**   compiled against an older header (smaller struct_size) keeps working:
**   fields it does not know take their defaults. Enum values are never
**   renumbered.
**
** OWNERSHIP
**   Whoever allocates frees. Strings and arrays passed in are borrowed for
**   the duration of the call (requests are copied before a call returns).
**   Memory the library hands out is freed with the matching function named
**   at each declaration.
**
** EXAMPLE
**   prepack_engine_options eo; prepack_engine_options_init(&eo);
**   eo.model = "synthetic:tiny";
**   prepack_engine *engine;
**   if (prepack_engine_create(&eo, &engine) != PREPACK_OK) {
**       fprintf(stderr, "%s\n", prepack_last_error()); return 1;
**   }
**   prepack_request rq; prepack_request_init(&rq);
**   rq.prompt = "Once upon a time"; rq.max_tokens = 32;
**   prepack_stream *s;
**   prepack_generate_start(engine, &rq, &s);
**   prepack_event ev; prepack_event_init(&ev);
**   while (prepack_stream_next(s, -1, &ev) == PREPACK_OK && ev.kind == PREPACK_EVENT_TOKEN)
**       fwrite(ev.text, 1, ev.text_len, stdout);
**   prepack_stream_destroy(s);
**   prepack_engine_destroy(engine);
*/
#ifndef PREPACK_PREPACK_H
#define PREPACK_PREPACK_H

#include <stddef.h>
#include <stdint.h>

#if defined(SWIG)
#  define PREPACK_API
#elif defined(_WIN32)
#  if defined(PREPACK_BUILDING_LIBRARY)
#    define PREPACK_API __declspec(dllexport)
#  else
#    define PREPACK_API __declspec(dllimport)
#  endif
#else
#  define PREPACK_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
** Versions
*/
#define PREPACK_VERSION_MAJOR 0
#define PREPACK_VERSION_MINOR 1
#define PREPACK_VERSION_PATCH 0
#define PREPACK_VERSION_STRING "0.1.0"
/* Bumped whenever a struct gains a field or a function is added. */
#define PREPACK_ABI_VERSION 9

/* The library's version, e.g. "0.1.0"; a static string, never NULL. Compare
** with PREPACK_VERSION_STRING to catch a header/library mismatch. */
PREPACK_API const char *prepack_version(void);
/* The library's PREPACK_ABI_VERSION. A library accepts callers compiled
** against any ABI version up to its own. */
PREPACK_API int prepack_abi_version(void);

/* ------------------------------------------------------------------------
** Status codes: the google.rpc.Code numbers.
*/
typedef enum prepack_status {
    PREPACK_OK                  = 0,
    PREPACK_CANCELLED           = 1,   /* the request was cancelled */
    PREPACK_UNKNOWN             = 2,
    PREPACK_INVALID_ARGUMENT    = 3,   /* a bad argument; the message names it */
    PREPACK_DEADLINE_EXCEEDED   = 4,   /* a deadline or timeout passed */
    PREPACK_NOT_FOUND           = 5,   /* a model file or name does not exist */
    PREPACK_RESOURCE_EXHAUSTED  = 8,   /* out of memory or KV budget */
    PREPACK_FAILED_PRECONDITION = 9,   /* the object is not in a state for this call */
    PREPACK_OUT_OF_RANGE        = 11,  /* a caller buffer is too small; the size needed is reported */
    PREPACK_UNIMPLEMENTED       = 12,  /* a feature this build does not have */
    PREPACK_INTERNAL            = 13,  /* a bug: please report it with the message */
    PREPACK_UNAVAILABLE         = 14,  /* the engine is shutting down */
    PREPACK_DATA_LOSS           = 15   /* a model file is truncated */
} prepack_status;

/* A static name for a status, e.g. "INVALID_ARGUMENT"; never NULL. */
PREPACK_API const char *prepack_status_str(prepack_status status);
/* The message of the calling thread's last failed call ("" if none). The
** pointer is valid until this thread's next prepack_* call. */
PREPACK_API const char *prepack_last_error(void);

/* ------------------------------------------------------------------------
** Engine
*/
typedef struct prepack_engine prepack_engine;

typedef enum prepack_device {
    PREPACK_DEVICE_CPU  = 0,
    PREPACK_DEVICE_CUDA = 1    /* an NVIDIA GPU: weights, KV cache and activations in device memory
                                  (libprepack_cuda.so, loaded from beside libprepack.so or from
                                  $PREPACK_CUDA_MODULE on first use). UNIMPLEMENTED in a build
                                  without CUDA, UNAVAILABLE without a usable GPU */
} prepack_device;

typedef enum prepack_policy {
    PREPACK_POLICY_FCFS     = 0,   /* first come, first served; continuous batching, nothing shared */
    PREPACK_POLICY_LRU      = 1,   /* + a block-hash prefix cache with LRU eviction (vLLM-style) */
    PREPACK_POLICY_BATCHLLM = 2    /* prepack_generate_batch groups prompts by a global prefix tree;
                                      streaming requests run as under FCFS */
} prepack_policy;

typedef enum prepack_dtype {
    PREPACK_DTYPE_F32  = 0,    /* f32 weights */
    PREPACK_DTYPE_BF16 = 1     /* bf16 weight matrices: half the memory and of decode's bytes per token;
                                  bf16 arithmetic on CPUs with native bf16 GEMM (AVX-512 BF16, AMX).
                                  The KV cache stores bf16 too (as vLLM's kv_cache_dtype "auto") */
} prepack_dtype;

typedef struct prepack_engine_options {
    size_t         struct_size;       /* set by prepack_engine_options_init() */
    const char    *model;             /* GGUF path or "synthetic:NAME"; required */
    prepack_device device;            /* default CPU */
    int32_t        threads;           /* CPU threads; 0 (default) = all CPUs */
    uint64_t       kv_budget_bytes;   /* 0 (default) = room for one full context, within a quarter of free memory */
    int32_t        kv_block_size;     /* tokens per KV block; default 16 */
    int32_t        max_batch_tokens;  /* tokens per forward step; default 1024 */
    int32_t        max_running;       /* sequences decoding at once; default 64 */
    prepack_policy policy;            /* default FCFS */
    prepack_dtype  dtype;             /* weight matrices; default F32 (ABI 4) */
    const char    *chat_template_file;/* ABI 7: a Jinja chat template used for chat requests instead of
                                         the model's own (tokenizer.chat_template); NULL = the model's */
} prepack_engine_options;

/* Fills *options with defaults (and struct_size). NULL is ignored. */
PREPACK_API void prepack_engine_options_init(prepack_engine_options *options);

/* Loads the model and starts the engine. On success *engine owns it: free
** with prepack_engine_destroy(). Returns INVALID_ARGUMENT (NULL arguments,
** bad values), NOT_FOUND (no such file or synthetic name), DATA_LOSS
** (truncated file), RESOURCE_EXHAUSTED (does not fit in memory),
** UNIMPLEMENTED (device not in this build), UNAVAILABLE (no usable GPU for
** PREPACK_DEVICE_CUDA). On failure *engine is
** untouched. Thread-safe. */
PREPACK_API prepack_status prepack_engine_create(const prepack_engine_options *options, prepack_engine **engine);

/* Stops the engine: requests still running end with CANCELLED (their
** streams stay readable until destroyed). Frees the engine. NULL is a no-op.
** Call once, after every other call on this engine has returned. */
PREPACK_API void prepack_engine_destroy(prepack_engine *engine);

typedef struct prepack_model_desc {
    size_t   struct_size;          /* set by the caller (prepack_model_desc_init) */
    char     name[128];            /* NUL-terminated, truncated if longer */
    char     architecture[32];
    int32_t  vocab_size;
    int32_t  context_length;
    int32_t  dim;
    int32_t  hidden_dim;
    int32_t  n_layers;
    int32_t  n_heads;
    int32_t  n_kv_heads;
    int32_t  bos_id;
    int32_t  eos_id;
    uint64_t parameters;
} prepack_model_desc;

PREPACK_API void prepack_model_desc_init(prepack_model_desc *desc);
/* Describes the engine's model. Thread-safe. INVALID_ARGUMENT for NULLs. */
PREPACK_API prepack_status prepack_model_info(const prepack_engine *engine, prepack_model_desc *desc);

typedef struct prepack_stats {
    size_t   struct_size;               /* set by the caller (prepack_stats_init) */
    uint64_t requests_submitted;
    uint64_t requests_finished;
    uint64_t requests_running;
    uint64_t requests_waiting;
    uint64_t prompt_tokens;             /* submitted prompt tokens */
    uint64_t prompt_tokens_computed;    /* prompt tokens that went through the model */
    uint64_t generated_tokens;
    uint64_t preemptions;               /* requests paused for KV memory and recomputed */
    uint64_t kv_bytes_total;
    uint64_t kv_bytes_used;
    double   prefix_saving;             /* fraction of prompt tokens served from shared prefixes */
    double   prompt_fraction_computed;  /* LazyLLM: fraction of prompt token-layers computed */
    /* ABI 8: the counts behind the ratios, for monitoring (prepackd's /metrics). */
    uint64_t steps;                        /* forward steps run */
    uint64_t prefill_steps;                /* steps that carried prompt tokens (whole prompts or chunks) */
    uint64_t prefill_step_tokens;          /* every token those steps carried, prompt and decode */
    uint64_t prefill_step_capacity;        /* their token budget: max_batch_tokens each (a lone LazyLLM
                                              prompt longer than that: its length). Packing efficiency
                                              = prefill_step_tokens / prefill_step_capacity */
    uint64_t prompt_token_layers;          /* prefilled prompt tokens x layers */
    uint64_t prompt_token_layers_computed; /* of which computed: LazyLLM pruned the rest */
    /* Prefix sharing, counted when a request that reached a step finishes, so
    ** that the hit tokens are the sum of their usage.cached_prompt_tokens: */
    uint64_t prefix_query_tokens;          /* their prompt tokens */
    uint64_t prefix_hit_tokens;            /* of which read from shared KV (a BatchLLM group's prefix or
                                              the LRU prefix cache) instead of being computed */
    uint64_t prefix_query_requests;        /* those requests */
    uint64_t prefix_hit_requests;          /* of which read any prompt token from shared KV */
    /* ABI 9, structured output: grammars the engine compiled (each spec once while it stays in its
    ** cache), requests that reused a compiled one, and the seconds spent compiling (on the threads
    ** that submitted the requests, never the engine's loop). */
    uint64_t grammar_cache_misses;
    uint64_t grammar_cache_hits;
    double   grammar_compile_seconds;
} prepack_stats;

PREPACK_API void prepack_stats_init(prepack_stats *stats);
/* A snapshot of the engine's counters. Thread-safe. */
PREPACK_API prepack_status prepack_engine_stats(const prepack_engine *engine, prepack_stats *stats);

/* ------------------------------------------------------------------------
** Text
*/

/* Encodes `text_len` bytes of UTF-8 `text` (BOS first when add_bos != 0)
** into `tokens`, which holds `capacity` ids. *n_tokens receives the number
** of ids. When capacity is too small, returns OUT_OF_RANGE with *n_tokens
** set to the number needed and `tokens` unspecified. `tokens` may be NULL
** when capacity is 0. INVALID_ARGUMENT for invalid UTF-8. Thread-safe. */
PREPACK_API prepack_status prepack_tokenize(const prepack_engine *engine, const char *text, size_t text_len,
                                            int add_bos, int32_t *tokens, size_t capacity, size_t *n_tokens);

/* ABI 5: prepack_tokenize with llama.cpp's two switches. add_special != 0:
** BOS (and EOS) as the vocabulary says (tokenizer.ggml.add_bos_token /
** add_eos_token); prepack_tokenize's add_bos is this switch.
** parse_special != 0: the text of control tokens such as <|eot_id|> or
** <|im_end|> becomes that one token; 0: such text is ordinary text (the
** safe default for untrusted input). Same buffers and errors as
** prepack_tokenize. */
PREPACK_API prepack_status prepack_tokenize_special(const prepack_engine *engine, const char *text, size_t text_len,
                                                    int add_special, int parse_special, int32_t *tokens,
                                                    size_t capacity, size_t *n_tokens);

/* Decodes `n_tokens` ids into `text` (capacity bytes) and NUL-terminates it;
** *text_len receives the length without the NUL. When capacity is too
** small, returns OUT_OF_RANGE with *text_len set to the length needed (add
** one for the NUL). Ids outside the vocabulary give INVALID_ARGUMENT.
** Exact: every id gives the bytes it stands for, so the ids of a completion
** alone decode to the completion's text, its leading space included. Only
** the first piece after a BOS loses the space SentencePiece put before the
** text, so tokenize(add_special=1) then detokenize gives the text back.
** Thread-safe. */
PREPACK_API prepack_status prepack_detokenize(const prepack_engine *engine, const int32_t *tokens, size_t n_tokens,
                                              char *text, size_t capacity, size_t *text_len);

/* ------------------------------------------------------------------------
** Conversations (ABI 7)
**
** A chat request carries messages instead of a prompt. The engine renders
** them with the model's own chat template (the GGUF's
** tokenizer.chat_template, or options.chat_template_file), exactly as
** Hugging Face transformers' apply_chat_template would, and tokenizes the
** result so that the template's markup becomes control tokens while the
** text of the messages never does: a user who writes "<|im_end|>" gets
** those characters, not the token. A model without a template answers
** FAILED_PRECONDITION, naming both ways to give one.
*/
typedef struct prepack_chat_message {
    size_t             struct_size;        /* set by prepack_chat_message_init() */
    const char        *role;               /* "system", "user", "assistant", "tool", ...; required */
    const char        *content;            /* UTF-8 text; NULL with no parts = no content (e.g. an
                                              assistant turn of tool calls only) */
    const char *const *content_parts;      /* or text parts, joined by "\n"; n_content_parts of them */
    size_t             n_content_parts;
    const char        *name;               /* optional */
    const char        *tool_calls_json;    /* optional: a JSON list of OpenAI tool calls
                                              [{"type": "function", "function": {"name", "arguments"}}] */
    const char        *tool_call_id;       /* optional: which call a "tool" message answers */
} prepack_chat_message;

typedef struct prepack_chat {
    size_t                      struct_size;            /* set by prepack_chat_init() */
    const prepack_chat_message *messages;               /* n_messages >= 1 of them */
    size_t                      n_messages;
    const char                 *tools_json;             /* optional: a JSON list of tool definitions
                                                           [{"type": "function", "function": {"name",
                                                           "description", "parameters"}}] */
    const char                 *kwargs_json;            /* optional: a JSON object of further template
                                                           variables, e.g. {"enable_thinking": false} */
    int32_t                     add_generation_prompt;  /* default 1: end with the assistant's opening */
    const char                 *template_name;          /* optional: one of the model's named templates
                                                           ("tool_use"); NULL = the default one */
} prepack_chat;

PREPACK_API void prepack_chat_init(prepack_chat *chat);
PREPACK_API void prepack_chat_message_init(prepack_chat_message *message);

typedef struct prepack_chat_prompt {
    char    *text;        /* the rendered prompt, NUL-terminated */
    size_t   text_len;
    int32_t *tokens;      /* its ids, BOS as the vocabulary says (never doubled) */
    size_t   n_tokens;
} prepack_chat_prompt;

/* Renders `chat` as a chat request would be rendered, and stores a
** library-allocated prompt in *prompt: free it with prepack_chat_prompt_free().
** INVALID_ARGUMENT (NULLs, a bad message, bad JSON, a template error: the
** template's own words when it raises), FAILED_PRECONDITION (the model has
** no chat template), RESOURCE_EXHAUSTED (a template past the engine's render
** limits). Thread-safe. */
PREPACK_API prepack_status prepack_chat_render(const prepack_engine *engine, const prepack_chat *chat,
                                               prepack_chat_prompt **prompt);
/* Frees what prepack_chat_render() returned. NULL is a no-op. */
PREPACK_API void prepack_chat_prompt_free(prepack_chat_prompt *prompt);

/* ------------------------------------------------------------------------
** Structured output (ABI 9)
**
** A request may require its generated text to be a sentence of a grammar:
** at each step the tokens that cannot continue it are masked before
** sampling, and the end-of-text token is allowed only where the grammar may
** end. The text is always bytes of the grammar's language, so a JSON Schema
** request gives JSON that parses and validates (unless max_tokens or a stop
** string cuts it short: finish_reason LENGTH / STOP).
*/
typedef enum prepack_grammar_kind {
    PREPACK_GRAMMAR_NONE        = 0,   /* unconstrained (the default) */
    PREPACK_GRAMMAR_JSON_OBJECT = 1,   /* any JSON object (OpenAI's {"type": "json_object"}); grammar unused */
    PREPACK_GRAMMAR_JSON_SCHEMA = 2,   /* grammar: a JSON Schema's JSON text (OpenAI's json_schema; objects
                                          allow no property the schema does not name, as OpenAI's strict mode) */
    PREPACK_GRAMMAR_REGEX       = 3,   /* grammar: a regular expression the whole text matches (JSON Schema's
                                          `pattern` syntax; no backreferences or lookaround) */
    PREPACK_GRAMMAR_GBNF        = 4    /* grammar: llama.cpp's GBNF, start rule "root" */
} prepack_grammar_kind;

/* Checks a grammar without running it: OK, or INVALID_ARGUMENT with a
** message naming the problem (for a schema, the keyword and its JSON
** pointer; for GBNF, the line and column; an unknown kind; NULL grammar
** text for a kind that needs it). What prepack_generate_start() would refuse
** for request.grammar_kind/grammar, found before any request starts (a
** server answers 400 before it streams). Needs no engine. Thread-safe. */
PREPACK_API prepack_status prepack_grammar_check(prepack_grammar_kind kind, const char *grammar);

/* ------------------------------------------------------------------------
** Tool calls (ABI 9)
**
** A chat request whose conversation has tools (prepack_chat.tools_json) may
** let the model call them, as OpenAI's tool_choice and parallel_tool_calls
** say. The call format is the one the model's chat template writes tool
** calls in (a template without a tool section: prepack's generic format, a
** JSON object the tools are described for in a system message), and each
** call is held to it and to its tool's `parameters` schema token by token.
** The calls never appear in the events' text: TOKEN events carry them as
** they are generated (tool_call_deltas, OpenAI's streaming deltas) and the
** END event carries them whole (tool_calls).
*/
typedef enum prepack_tool_choice {
    PREPACK_TOOL_CHOICE_NONE     = 0,   /* the tools are only rendered for the model to read; what a
                                           caller built before these fields gets */
    PREPACK_TOOL_CHOICE_AUTO     = 1,   /* the default: the model answers in text or calls tools */
    PREPACK_TOOL_CHOICE_REQUIRED = 2,   /* the model calls at least one tool */
    PREPACK_TOOL_CHOICE_FUNCTION = 3    /* the model calls request.tool_choice_function */
} prepack_tool_choice;

/* A piece of a call as it is generated. The pointers are valid until the
** next event of the stream (as the event's text). */
typedef struct prepack_tool_call_delta {
    int32_t     index;           /* the call's place in the answer: 0, 1, ... */
    const char *id;              /* a call's first piece: its id ("call_" + 24 characters); NULL after */
    const char *name;            /* a call's first piece: the function called; NULL after */
    const char *arguments;       /* a piece of the arguments' JSON text, NUL-terminated (may be "") */
    size_t      arguments_len;
} prepack_tool_call_delta;

/* A whole call: the deltas of one index added up. */
typedef struct prepack_tool_call {
    const char *id;              /* as its first delta said */
    const char *name;
    const char *arguments;       /* the arguments: a JSON object's text, NUL-terminated */
    size_t      arguments_len;
} prepack_tool_call;

/* ------------------------------------------------------------------------
** Requests
*/
typedef struct prepack_request {
    size_t             struct_size;         /* set by prepack_request_init() */
    const char        *prompt;              /* UTF-8, NUL-terminated; used when prompt_tokens is NULL */
    const int32_t     *prompt_tokens;       /* token ids taken as given (no BOS added) */
    size_t             n_prompt_tokens;
    int32_t            add_bos;             /* default 1: BOS (and EOS) as the vocabulary says; an empty
                                               prompt is then BOS alone */
    int32_t            max_tokens;          /* default 128; >= 1 */
    float              temperature;         /* default 1.0; 0 = greedy */
    int32_t            top_k;               /* default 0 = off */
    float              top_p;               /* default 1.0 = off */
    float              min_p;               /* default 0.0 = off */
    float              repetition_penalty;  /* default 1.0 = off */
    uint64_t           seed;                /* default 0; same seed, same tokens */
    const char *const *stop;                /* stop strings (NUL-terminated), n_stop of them */
    size_t             n_stop;
    int32_t            logprobs;            /* alternatives reported per token, 0..20; default 0 */
    int32_t            ignore_eos;          /* default 0; not with a grammar (ABI 9) */
    int64_t            deadline_ms;         /* from submission; 0 (default) = none */
    /* LazyLLM pruning of the prompt (Fu et al. 2024). The prompt is prefilled
    ** in one step; tokens its last token barely attends to skip later layers. */
    int32_t            lazy;                /* default 0 = off */
    float              lazy_keep_ratio;     /* 0 (default): the default schedule (whole first quarter of
                                               the layers, then 50%, 30%, 15%); in (0, 1): those layers
                                               keeping r^(1/3), r^(2/3), r; 1: score but keep all */
    const char        *lazy_schedule;       /* ABI 3: "LAYER:KEEP,..." overrides lazy_keep_ratio; NULL = unset */
    int32_t            parse_special;       /* ABI 5: default 0; 1: control-token text in `prompt`
                                               (<|eot_id|>, <|im_end|>) becomes that token */
    int32_t            lazy_revive_limit;   /* ABI 6: pruned prompt tokens one decode step may bring back
                                               (each through its remaining layers): 0 (default) = the
                                               engine's default bound, N > 0 = at most N, -1 = no bound */
    const prepack_chat *chat;               /* ABI 7: a conversation rendered by the model's chat template;
                                               then prompt and prompt_tokens must be NULL and parse_special 0.
                                               Works in every form: streams, callbacks and batches (a batch
                                               of conversations shares their common system prompt) */
    int32_t            prompt_logprobs;     /* ABI 8: -1 (default) = off; 0..20: the first TOKEN event also
                                               reports log p of every prompt token after the first, given
                                               the ones before it, with this many alternatives each (what
                                               evaluation harnesses score texts by). The request then
                                               computes its whole prompt itself (no shared prefix); not
                                               with lazy */
    prepack_grammar_kind grammar_kind;      /* ABI 9: structured output (see above); default NONE */
    const char        *grammar;             /* ABI 9: the kind's text, NUL-terminated (the schema, regex or
                                               GBNF); NULL for NONE and JSON_OBJECT. Refused (INVALID_ARGUMENT
                                               naming the problem) as prepack_grammar_check() refuses it */
    /* ABI 9, tool calls (see above). A caller whose struct_size ends before parallel_tool_calls gets
    ** NONE: its tools stay render-only, as they were. */
    prepack_tool_choice tool_choice;        /* default AUTO, which without tools is plain text; REQUIRED and
                                               FUNCTION need a chat with tools_json. With tools, any but NONE
                                               excludes a grammar_kind other than NONE and ignore_eos */
    const char        *tool_choice_function;/* FUNCTION: the name of one of the tools; NULL otherwise */
    int32_t            parallel_tool_calls; /* default 1: an answer may make several calls; 0: at most one */
} prepack_request;

/* Fills *request with defaults (and struct_size). NULL is ignored. */
PREPACK_API void prepack_request_init(prepack_request *request);

/* ------------------------------------------------------------------------
** Streaming, pull: start a request, then read its events.
*/
typedef struct prepack_stream prepack_stream;

typedef enum prepack_event_kind {
    PREPACK_EVENT_TOKEN = 0,   /* one generated token */
    PREPACK_EVENT_END   = 1    /* the request ended; the last event of a stream */
} prepack_event_kind;

typedef enum prepack_finish_reason {
    PREPACK_FINISH_NONE      = 0,   /* (token events) */
    PREPACK_FINISH_STOP      = 1,   /* a stop string was generated (it is not in the text) */
    PREPACK_FINISH_LENGTH    = 2,   /* max_tokens or the end of the context */
    PREPACK_FINISH_EOS       = 3,   /* the model ended the text */
    PREPACK_FINISH_CANCELLED = 4,   /* prepack_stream_cancel(), a callback, or engine shutdown */
    PREPACK_FINISH_ERROR     = 5    /* see status and message (e.g. DEADLINE_EXCEEDED) */
} prepack_finish_reason;

typedef struct prepack_usage {
    int32_t prompt_tokens;
    int32_t completion_tokens;
    double  queue_ms;       /* submitted -> first scheduled */
    double  ttft_ms;        /* submitted -> first token */
    double  total_ms;       /* submitted -> finished */
    int32_t cached_prompt_tokens;   /* prompt tokens served from a shared prefix's KV (ABI 2) */
    double  pruned_fraction;        /* LazyLLM: fraction of the prompt's token-layers its prefill skipped (ABI 2) */
} prepack_usage;

typedef struct prepack_event {
    size_t                struct_size;   /* set by prepack_event_init() */
    prepack_event_kind    kind;
    /* PREPACK_EVENT_TOKEN */
    int32_t               token;
    const char           *text;          /* this token's text: always whole UTF-8 (may be empty while a
                                            stop string or a multi-byte character is pending) */
    size_t                text_len;
    float                 logprob;       /* log p(token) under the model */
    const int32_t        *top_ids;       /* request.logprobs most likely ids, best first */
    const float          *top_logprobs;
    size_t                n_top;
    /* PREPACK_EVENT_END */
    prepack_finish_reason finish_reason;
    prepack_status        status;        /* OK, CANCELLED, DEADLINE_EXCEEDED, ... */
    const char           *message;       /* why, when status is not OK ("" otherwise) */
    prepack_usage         usage;
    /* ABI 7, chat requests whose template has <think> sections (Qwen3, DeepSeek-R1 style): */
    const char           *reasoning;     /* TOKEN: this token's thinking text, apart from `text` (the
                                            answer); the <think> tags are in neither */
    size_t                reasoning_len;
    int32_t               reasoning_tokens;   /* END: generated tokens that were thinking */
    /* ABI 8, the first TOKEN event of a request with prompt_logprobs >= 0: */
    const int32_t        *prompt_token_ids;   /* n_prompt_logprobs ids: prompt tokens 1, 2, ... (all but the first) */
    const float          *prompt_logprobs;    /* entry i: log p(prompt_token_ids[i] | the tokens before it) */
    size_t                n_prompt_logprobs;  /* the prompt's token count - 1 */
    const int32_t        *prompt_top_ids;     /* n_prompt_logprobs x prompt_n_top, row-major, best first */
    const float          *prompt_top_logprobs;
    size_t                prompt_n_top;       /* request.prompt_logprobs */
    /* ABI 9, requests with tools (request.tool_choice other than NONE); the call markup is never in
    ** `text`: */
    const prepack_tool_call_delta *tool_call_deltas;   /* TOKEN: the calls as they are generated (a
                                                          call's first delta has its id and name, its
                                                          arguments follow in pieces); often none */
    size_t                n_tool_call_deltas;
    const prepack_tool_call *tool_calls;      /* END: every call of the answer, whole (the deltas added
                                                 up, the same ids). Some calls mean OpenAI's
                                                 finish_reason "tool_calls", unless finish_reason is
                                                 LENGTH (the answer was cut short) */
    size_t                n_tool_calls;
} prepack_event;

PREPACK_API void prepack_event_init(prepack_event *event);

/* Submits a request. On success *stream owns its event stream: free it with
** prepack_stream_destroy(). INVALID_ARGUMENT (NULLs, empty prompt, bad
** sampling values, ids outside the vocabulary, prompt at or past the
** context, bad lazy schedule, a grammar or tool field refused as described
** above, tools the engine cannot plan calls for: "tools[i]..."),
** RESOURCE_EXHAUSTED (the prompt can never fit the KV budget), UNAVAILABLE
** (engine shutting down). Thread-safe. */
PREPACK_API prepack_status prepack_generate_start(prepack_engine *engine, const prepack_request *request,
                                                  prepack_stream **stream);

/* Waits up to timeout_ms (< 0: without limit) for the stream's next event
** and stores it in *event. Pointers inside *event stay valid until the next
** prepack_stream_next() or prepack_stream_destroy() on this stream.
** Returns OK with an event; DEADLINE_EXCEEDED when the timeout passed
** (no event, try again); OUT_OF_RANGE after the END event was delivered.
** Call from one thread at a time per stream. */
PREPACK_API prepack_status prepack_stream_next(prepack_stream *stream, int64_t timeout_ms, prepack_event *event);

/* Asks the engine to stop the request; its END event (CANCELLED) follows
** promptly and its KV memory is freed. Safe from any thread, at any time
** before prepack_stream_destroy(), any number of times. */
PREPACK_API prepack_status prepack_stream_cancel(prepack_stream *stream);

/* Cancels the request if it is still running and frees the stream. NULL is
** a no-op. */
PREPACK_API void prepack_stream_destroy(prepack_stream *stream);

/* ------------------------------------------------------------------------
** Streaming, push: a callback per event.
**
** The callback runs on the calling thread for every event, the END event
** included; returning non-zero from a TOKEN event cancels the request (the
** END event with CANCELLED still follows). `event` and its pointers are
** valid only during the callback.
*/
typedef int (*prepack_event_callback)(const prepack_event *event, void *user_data);

/* Runs a request to its end, calling `callback` for each event. Returns the
** submission error (as prepack_generate_start) or else the END event's
** status: OK, CANCELLED (stopped by the callback or shutdown),
** DEADLINE_EXCEEDED, ... */
PREPACK_API prepack_status prepack_generate(prepack_engine *engine, const prepack_request *request,
                                            prepack_event_callback callback, void *user_data);

/* ------------------------------------------------------------------------
** Offline batch
*/
typedef struct prepack_result {
    int32_t              *tokens;        /* generated ids */
    size_t                n_tokens;
    char                 *text;          /* NUL-terminated generated text (for a chat request with
                                            thinking: the answer, the thinking from
                                            prepack_result_reasoning(); with tools: the text that is not
                                            a call, the calls from prepack_result_tool_calls()) */
    size_t                text_len;
    prepack_finish_reason finish_reason;
    prepack_status        status;        /* OK, or why this request failed */
    char                 *message;       /* NUL-terminated; "" when OK */
    prepack_usage         usage;
} prepack_result;

/* Called on the calling thread each time a request finishes. */
typedef void (*prepack_progress_callback)(size_t done, size_t total, void *user_data);

typedef struct prepack_batch_options {
    size_t                    struct_size;   /* set by prepack_batch_options_init() */
    prepack_progress_callback progress;      /* may be NULL */
    void                     *user_data;
} prepack_batch_options;

PREPACK_API void prepack_batch_options_init(prepack_batch_options *options);

/* Runs `n` requests (an array of pointers) as one offline batch, under the
** engine's policy (BATCHLLM: shared prefixes computed once), and stores a
** library-allocated array of n results, in request order, in *results: free
** it with prepack_results_free(*results, n). A request that fails (bad
** input, deadline) has its status in its result; the call still returns OK.
** Returns INVALID_ARGUMENT for NULL arguments or n == 0, UNAVAILABLE when
** the engine shuts down meanwhile. `options` may be NULL. Thread-safe. */
PREPACK_API prepack_status prepack_generate_batch(prepack_engine *engine, const prepack_request *const *requests,
                                                  size_t n, const prepack_batch_options *options,
                                                  prepack_result **results);

/* The streaming form of prepack_generate_batch() (ABI 3): submits `n`
** requests as one batch under the engine's policy and stores one stream per
** request in streams[0..n-1], to read and free as streams from
** prepack_generate_start(). Results arrive in whatever order the requests
** finish; wait on several streams by polling each with a timeout of 0. A
** request that cannot start (bad field, never fits the KV budget, engine
** shutting down) still gets a stream whose only event is END with
** PREPACK_FINISH_ERROR and that request's status and message. Returns
** INVALID_ARGUMENT for NULL arguments or n == 0 (then no stream is made).
** Thread-safe. */
PREPACK_API prepack_status prepack_generate_batch_start(prepack_engine *engine, const prepack_request *const *requests,
                                                        size_t n, prepack_stream **streams);

/* Frees what prepack_generate_batch() returned. NULL is a no-op. */
PREPACK_API void prepack_results_free(prepack_result *results, size_t n);

/* ABI 9: what a batch result holds beyond prepack_result's fields, for
** result i of `results` (what prepack_generate_batch() returned; i below
** its n). The pointers stay valid until prepack_results_free(results, n).
** INVALID_ARGUMENT for NULLs or i out of range. */
/* The calls of a request with tools (*n = 0 when it made none). */
PREPACK_API prepack_status prepack_result_tool_calls(const prepack_result *results, size_t i,
                                                     const prepack_tool_call **calls, size_t *n);
/* A reasoning model's thinking (the TOKEN events' reasoning, joined; "" when none), apart from text. */
PREPACK_API prepack_status prepack_result_reasoning(const prepack_result *results, size_t i, const char **reasoning,
                                                    size_t *reasoning_len);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* PREPACK_PREPACK_H */
