/* Tool calls through the C ABI (ABI 9) on the real chat model
** (SmolLM2-135M-Instruct, whose template has no tool section: prepack's
** generic format). A request with tools and tool_choice REQUIRED or FUNCTION
** streams its calls as deltas (never as text) and ends with the whole calls,
** which are the deltas added up (checked by assembling them here); a call
** names the tool asked for and its arguments are a JSON object; NONE and a
** caller built before the tool fields (a shorter struct_size) get text
** only, token for token the same; bad tool fields are refused naming them;
** a batch's results give their calls and reasoning through
** prepack_result_tool_calls / prepack_result_reasoning. Skips (77) without
** the model. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

#define MAX_CALLS 8
#define MAX_ARGS 1024
#define MAX_TEXT 4096

static const char *kTools =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"The weather in a city\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", \"maxLength\": 20}},"
    " \"required\": [\"city\"], \"additionalProperties\": false}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"The time in a timezone\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"zone\": {\"enum\": [\"UTC\", \"CET\"]}},"
    " \"required\": [\"zone\"], \"additionalProperties\": false}}}]";

typedef struct {
    char   id[64];
    char   name[64];
    char   arguments[MAX_ARGS];
    size_t arguments_len;
} call;

typedef struct {
    char                  text[MAX_TEXT];
    size_t                text_len;
    int32_t               tokens[512];
    size_t                n_tokens;
    call                  from_deltas[MAX_CALLS];   /* the deltas added up, as a client would */
    size_t                n_from_deltas;
    int                   deltas_in_order;          /* each delta's index was known or the next one */
    call                  at_end[MAX_CALLS];        /* the END event's calls */
    size_t                n_at_end;
    prepack_finish_reason finish;
    prepack_status        status;
} outcome;

static void copy_str(char *dst, size_t cap, const char *src, size_t n) {
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void add_delta(outcome *o, const prepack_tool_call_delta *d) {
    if (d->index < 0 || (size_t)d->index > o->n_from_deltas || d->index >= MAX_CALLS) {
        o->deltas_in_order = 0;
        return;
    }
    call *c = &o->from_deltas[d->index];
    if ((size_t)d->index == o->n_from_deltas) {
        /* A new call: its first delta has its id and name. */
        memset(c, 0, sizeof *c);
        ++o->n_from_deltas;
        if (d->id == NULL || d->name == NULL) o->deltas_in_order = 0;
        if (d->id != NULL) copy_str(c->id, sizeof c->id, d->id, strlen(d->id));
        if (d->name != NULL) copy_str(c->name, sizeof c->name, d->name, strlen(d->name));
    } else if (d->id != NULL || d->name != NULL) {
        o->deltas_in_order = 0;   /* only a call's first delta names it */
    }
    if (c->arguments_len + d->arguments_len < MAX_ARGS) {
        memcpy(c->arguments + c->arguments_len, d->arguments, d->arguments_len);
        c->arguments_len += d->arguments_len;
        c->arguments[c->arguments_len] = '\0';
    }
}

static void add_event(outcome *o, const prepack_event *ev) {
    if (ev->kind == PREPACK_EVENT_TOKEN) {
        if (o->text_len + ev->text_len < MAX_TEXT) {
            memcpy(o->text + o->text_len, ev->text, ev->text_len);
            o->text_len += ev->text_len;
            o->text[o->text_len] = '\0';
        }
        if (o->n_tokens < 512) o->tokens[o->n_tokens++] = ev->token;
        for (size_t i = 0; i < ev->n_tool_call_deltas; ++i) add_delta(o, &ev->tool_call_deltas[i]);
        return;
    }
    o->finish = ev->finish_reason;
    o->status = ev->status;
    if (ev->status != PREPACK_OK) fprintf(stderr, "END: %s\n", ev->message);
    CHECK(ev->n_tool_calls <= MAX_CALLS);
    for (size_t i = 0; i < ev->n_tool_calls && i < MAX_CALLS; ++i) {
        const prepack_tool_call *t = &ev->tool_calls[i];
        call *c = &o->at_end[o->n_at_end++];
        copy_str(c->id, sizeof c->id, t->id, strlen(t->id));
        copy_str(c->name, sizeof c->name, t->name, strlen(t->name));
        copy_str(c->arguments, sizeof c->arguments, t->arguments, t->arguments_len);
        c->arguments_len = t->arguments_len;
        CHECK(strlen(t->arguments) == t->arguments_len);   /* NUL-terminated there */
    }
}

static void reset(outcome *o) {
    memset(o, 0, sizeof *o);
    o->deltas_in_order = 1;
    o->status = PREPACK_UNKNOWN;
}

static void run_pull(prepack_engine *e, const prepack_request *rq, outcome *o) {
    reset(o);
    prepack_stream *s = NULL;
    CHECK_STATUS(prepack_generate_start(e, rq, &s), PREPACK_OK);
    if (s == NULL) return;
    prepack_event ev;
    prepack_event_init(&ev);
    while (prepack_stream_next(s, -1, &ev) == PREPACK_OK) {
        add_event(o, &ev);
        if (ev.kind == PREPACK_EVENT_END) break;
    }
    prepack_stream_destroy(s);
}

static int on_event(const prepack_event *ev, void *user) {
    add_event((outcome *)user, ev);
    return 0;
}

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* A JSON object's text holding `key` as a key: '{' ... '}' around "key": (a
** cheap judge; the grammar engine's own tests check the JSON itself). */
static int object_with_key(const char *s, size_t n, const char *key) {
    size_t b = 0, e = n;
    while (b < e && is_space(s[b])) ++b;
    while (e > b && is_space(s[e - 1])) --e;
    if (e - b < 2 || s[b] != '{' || s[e - 1] != '}') return 0;
    char quoted[80];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(s, quoted);
    if (at == NULL) return 0;
    at += strlen(quoted);
    while (is_space(*at)) ++at;
    return *at == ':';
}

/* "call_" and 24 letters or digits. */
static int is_call_id(const char *id) {
    if (strncmp(id, "call_", 5) != 0 || strlen(id) != 29) return 0;
    for (const char *p = id + 5; *p; ++p) {
        const int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!ok) return 0;
    }
    return 1;
}

static int same_calls(const call *a, size_t na, const call *b, size_t nb, int with_ids) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; ++i) {
        if (with_ids && strcmp(a[i].id, b[i].id) != 0) return 0;
        if (strcmp(a[i].name, b[i].name) != 0 || strcmp(a[i].arguments, b[i].arguments) != 0) return 0;
    }
    return 1;
}

static void chat_of(prepack_chat *chat, prepack_chat_message *msg, const char *user, const char *tools) {
    prepack_chat_init(chat);
    prepack_chat_message_init(msg);
    msg->role = "user";
    msg->content = user;
    chat->messages = msg;
    chat->n_messages = 1;
    chat->tools_json = tools;
}

static void request_of(prepack_request *rq, const prepack_chat *chat, prepack_tool_choice choice,
                       const char *function) {
    prepack_request_init(rq);
    rq->chat = chat;
    rq->max_tokens = 160;
    rq->temperature = 0.0f;
    rq->tool_choice = choice;
    rq->tool_choice_function = function;
    rq->parallel_tool_calls = 0;
}

/* A finished tool request: calls as asked, the deltas adding up to them, no text. */
static void check_calls(const outcome *o, const char *want_name, const char *want_key) {
    CHECK(o->status == PREPACK_OK);
    CHECK(o->finish == PREPACK_FINISH_EOS || o->finish == PREPACK_FINISH_STOP);
    CHECK(o->n_at_end == 1);   /* parallel_tool_calls 0: one call */
    CHECK(o->deltas_in_order);
    CHECK(same_calls(o->from_deltas, o->n_from_deltas, o->at_end, o->n_at_end, 1));
    for (size_t i = 0; i < o->n_at_end; ++i) {
        CHECK(strcmp(o->at_end[i].name, want_name) == 0);
        CHECK(is_call_id(o->at_end[i].id));
        CHECK(object_with_key(o->at_end[i].arguments, o->at_end[i].arguments_len, want_key));
    }
    /* The generic format's answer is all call: no text. */
    CHECK(o->text_len == 0);
    if (o->n_at_end > 0) fprintf(stderr, "call: %s %s\n", o->at_end[0].name, o->at_end[0].arguments);
}

int main(void) {
    char model[1024];
    snprintf(model, sizeof model, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", PREPACK_FETCHED_MODELS_DIR);
    FILE *f = fopen(model, "rb");
    if (f == NULL) return skip("SmolLM2-135M-Instruct.Q4_1.gguf is absent (scripts/get_models.sh fetches it)");
    fclose(f);

    prepack_engine_options eo;
    prepack_engine_options_init(&eo);
    eo.model = model;
    eo.threads = 2;
    prepack_engine *e = NULL;
    CHECK_STATUS(prepack_engine_create(&eo, &e), PREPACK_OK);
    if (e == NULL) return finish();

    prepack_chat weather, plain;
    prepack_chat_message m1, m2;
    chat_of(&weather, &m1, "What is the weather in Paris?", kTools);
    chat_of(&plain, &m2, "What is the weather in Paris?", NULL);

    /* The defaults: AUTO, parallel calls allowed, no function. */
    {
        prepack_request rq;
        prepack_request_init(&rq);
        CHECK(rq.tool_choice == PREPACK_TOOL_CHOICE_AUTO);
        CHECK(rq.parallel_tool_calls == 1);
        CHECK(rq.tool_choice_function == NULL);
        prepack_event ev;
        prepack_event_init(&ev);
        CHECK(ev.tool_call_deltas == NULL && ev.n_tool_call_deltas == 0);
        CHECK(ev.tool_calls == NULL && ev.n_tool_calls == 0);
    }

    /* REQUIRED, pulled and by callback: the same call (greedy), new ids. */
    outcome req;
    prepack_request rq;
    request_of(&rq, &weather, PREPACK_TOOL_CHOICE_REQUIRED, NULL);
    run_pull(e, &rq, &req);
    check_calls(&req, "get_weather", "city");
    {
        outcome cb;
        reset(&cb);
        CHECK_STATUS(prepack_generate(e, &rq, on_event, &cb), PREPACK_OK);
        check_calls(&cb, "get_weather", "city");
        CHECK(same_calls(cb.at_end, cb.n_at_end, req.at_end, req.n_at_end, 0));
        CHECK(cb.n_at_end == 1 && req.n_at_end == 1 && strcmp(cb.at_end[0].id, req.at_end[0].id) != 0);
    }

    /* FUNCTION: the named tool, whatever the question. */
    {
        outcome named;
        prepack_request fq;
        request_of(&fq, &weather, PREPACK_TOOL_CHOICE_FUNCTION, "get_time");
        run_pull(e, &fq, &named);
        check_calls(&named, "get_time", "zone");
        CHECK(named.n_at_end == 0 || strstr(named.at_end[0].arguments, "UTC") != NULL ||
              strstr(named.at_end[0].arguments, "CET") != NULL);
    }

    /* NONE: the tools only rendered; text, no calls. A caller built before
    ** the tool fields (its struct_size ends before tool_choice, and what
    ** follows is garbage) gets exactly that. */
    outcome none;
    {
        prepack_request nq;
        request_of(&nq, &weather, PREPACK_TOOL_CHOICE_NONE, NULL);
        nq.max_tokens = 24;
        run_pull(e, &nq, &none);
        CHECK(none.status == PREPACK_OK);
        CHECK(none.n_at_end == 0 && none.n_from_deltas == 0);
        CHECK(none.text_len > 0);

        prepack_request old;
        request_of(&old, &weather, PREPACK_TOOL_CHOICE_REQUIRED, NULL);
        old.max_tokens = 24;
        old.struct_size = offsetof(prepack_request, tool_choice);
        old.tool_choice = (prepack_tool_choice)77;
        old.tool_choice_function = (const char *)0x1;   /* never read */
        outcome o;
        run_pull(e, &old, &o);
        CHECK(o.status == PREPACK_OK);
        CHECK(o.n_at_end == 0 && o.n_from_deltas == 0);
        CHECK(o.n_tokens == none.n_tokens && memcmp(o.tokens, none.tokens, none.n_tokens * sizeof(int32_t)) == 0);
    }

    /* Refused, naming the field. */
    {
        prepack_request bad;
        prepack_stream *s = NULL;
        request_of(&bad, &weather, PREPACK_TOOL_CHOICE_FUNCTION, NULL);
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "tool_choice_function") != NULL);
        request_of(&bad, &weather, PREPACK_TOOL_CHOICE_AUTO, "get_time");
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "tool_choice_function") != NULL);
        request_of(&bad, &weather, (prepack_tool_choice)9, NULL);
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "tool_choice 9 is unknown") != NULL);
        request_of(&bad, &plain, PREPACK_TOOL_CHOICE_REQUIRED, NULL);
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "no tools") != NULL);
        request_of(&bad, &weather, PREPACK_TOOL_CHOICE_FUNCTION, "get_stock");
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "get_stock") != NULL);
        request_of(&bad, &weather, PREPACK_TOOL_CHOICE_REQUIRED, NULL);
        bad.grammar_kind = PREPACK_GRAMMAR_JSON_OBJECT;
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "grammar_kind") != NULL);
        request_of(&bad, &weather, PREPACK_TOOL_CHOICE_AUTO, NULL);
        bad.ignore_eos = 1;
        CHECK_STATUS(prepack_generate_start(e, &bad, &s), PREPACK_INVALID_ARGUMENT);
        CHECK(strstr(prepack_last_error(), "ignore_eos") != NULL);
        CHECK(s == NULL);
        /* AUTO without tools is plain text (the default of every request). */
        request_of(&bad, &plain, PREPACK_TOOL_CHOICE_AUTO, NULL);
        bad.max_tokens = 4;
        outcome o;
        run_pull(e, &bad, &o);
        CHECK(o.status == PREPACK_OK && o.n_at_end == 0);
    }

    /* A batch: result 0 makes the REQUIRED call (the same as streamed, its
    ** own id), result 1 (NONE) none; the accessors' bounds. */
    {
        prepack_request nq;
        request_of(&nq, &weather, PREPACK_TOOL_CHOICE_NONE, NULL);
        nq.max_tokens = 24;
        const prepack_request *batch[2] = {&rq, &nq};
        prepack_result *results = NULL;
        CHECK_STATUS(prepack_generate_batch(e, batch, 2, NULL, &results), PREPACK_OK);
        if (results != NULL) {
            const prepack_tool_call *calls = NULL;
            size_t n = 99;
            CHECK_STATUS(prepack_result_tool_calls(results, 0, &calls, &n), PREPACK_OK);
            CHECK(n == req.n_at_end && calls != NULL);
            for (size_t i = 0; i < n && i < req.n_at_end; ++i) {
                CHECK(strcmp(calls[i].name, req.at_end[i].name) == 0);
                CHECK(calls[i].arguments_len == req.at_end[i].arguments_len &&
                      strcmp(calls[i].arguments, req.at_end[i].arguments) == 0);
                CHECK(is_call_id(calls[i].id) && strcmp(calls[i].id, req.at_end[i].id) != 0);
            }
            CHECK(results[0].text_len == 0);
            CHECK(results[0].n_tokens == req.n_tokens);
            CHECK_STATUS(prepack_result_tool_calls(results, 1, &calls, &n), PREPACK_OK);
            CHECK(n == 0 && calls == NULL);
            CHECK(results[1].text_len == none.text_len && strcmp(results[1].text, none.text) == 0);
            const char *reasoning = NULL;
            size_t rlen = 99;
            CHECK_STATUS(prepack_result_reasoning(results, 1, &reasoning, &rlen), PREPACK_OK);
            CHECK(reasoning != NULL && rlen == 0 && reasoning[0] == '\0');
            CHECK_STATUS(prepack_result_tool_calls(results, 2, &calls, &n), PREPACK_INVALID_ARGUMENT);
            CHECK(strstr(prepack_last_error(), "out of range") != NULL);
            CHECK_STATUS(prepack_result_reasoning(results, 2, &reasoning, &rlen), PREPACK_INVALID_ARGUMENT);
            CHECK_STATUS(prepack_result_tool_calls(NULL, 0, &calls, &n), PREPACK_INVALID_ARGUMENT);
            CHECK_STATUS(prepack_result_tool_calls(results, 0, NULL, &n), PREPACK_INVALID_ARGUMENT);
            CHECK_STATUS(prepack_result_reasoning(results, 0, &reasoning, NULL), PREPACK_INVALID_ARGUMENT);
            prepack_results_free(results, 2);
        }
    }
    prepack_engine_destroy(e);

    /* A batch result's reasoning: a template whose generation prompt opens
    ** <think> makes the whole answer thinking, which the result's text
    ** lacks and prepack_result_reasoning gives: the decoded tokens. */
    {
        const char *tmpl_path = "capi_tools_test_template.jinja";   /* in the test's working directory */
        FILE *t = fopen(tmpl_path, "w");
        CHECK(t != NULL);
        if (t != NULL) {
            fputs("{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}<think>{% endif %}",
                  t);
            fclose(t);
            eo.chat_template_file = tmpl_path;
            CHECK_STATUS(prepack_engine_create(&eo, &e), PREPACK_OK);
            if (e != NULL) {
                prepack_request tq;
                prepack_request_init(&tq);
                tq.chat = &plain;
                tq.max_tokens = 12;
                tq.temperature = 0.0f;
                tq.ignore_eos = 1;
                const prepack_request *one[1] = {&tq};
                prepack_result *results = NULL;
                CHECK_STATUS(prepack_generate_batch(e, one, 1, NULL, &results), PREPACK_OK);
                if (results != NULL) {
                    const char *reasoning = NULL;
                    size_t rlen = 0;
                    CHECK_STATUS(prepack_result_reasoning(results, 0, &reasoning, &rlen), PREPACK_OK);
                    CHECK(results[0].n_tokens == 12 && results[0].text_len == 0);
                    char text[4096];
                    size_t len = 0;
                    CHECK_STATUS(prepack_detokenize(e, results[0].tokens, results[0].n_tokens, text, sizeof text, &len),
                                 PREPACK_OK);
                    CHECK(rlen > 0 && rlen == len && reasoning != NULL && strcmp(reasoning, text) == 0);
                    prepack_results_free(results, 1);
                }
                prepack_engine_destroy(e);
            }
        }
        remove(tmpl_path);
    }
    return finish();
}
