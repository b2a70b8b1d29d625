/* Structured output through the C ABI (ABI 9) on stories260K: a grammar on a
** request constrains what it generates, by pull, by callback and in a batch
** (checked against the grammar's language written out by hand here: a regex
** of fixed shape, a GBNF choice, a JSON Schema enum, any JSON object); bad
** grammars are refused by prepack_grammar_check and at submission (a batch:
** in that request's result only); a caller built against ABI 8 (a shorter
** struct_size, garbage where ABI 9 put grammar_kind) runs unconstrained; the
** engine's grammar counters. Skips (77) without the model. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

#define MAX_TEXT 4096

typedef struct {
    char                  text[MAX_TEXT];
    size_t                len;
    int32_t               tokens[256];
    size_t                n_tokens;
    prepack_finish_reason finish;
    prepack_status        status;
} outcome;

static void add_token(outcome *o, const prepack_event *ev) {
    if (o->len + ev->text_len < MAX_TEXT) {
        memcpy(o->text + o->len, ev->text, ev->text_len);
        o->len += ev->text_len;
        o->text[o->len] = '\0';
    }
    if (o->n_tokens < 256) o->tokens[o->n_tokens++] = ev->token;
}

static void run_pull(prepack_engine *e, const prepack_request *rq, outcome *o) {
    prepack_stream *s = NULL;
    memset(o, 0, sizeof *o);
    o->status = PREPACK_UNKNOWN;
    CHECK_STATUS(prepack_generate_start(e, rq, &s), PREPACK_OK);
    if (s == NULL) return;
    prepack_event ev;
    prepack_event_init(&ev);
    while (prepack_stream_next(s, -1, &ev) == PREPACK_OK) {
        if (ev.kind == PREPACK_EVENT_END) {
            o->finish = ev.finish_reason;
            o->status = ev.status;
            if (ev.status != PREPACK_OK) fprintf(stderr, "END: %s\n", ev.message);
            break;
        }
        add_token(o, &ev);
    }
    prepack_stream_destroy(s);
}

static int on_event(const prepack_event *ev, void *user) {
    outcome *o = (outcome *)user;
    if (ev->kind == PREPACK_EVENT_TOKEN) {
        add_token(o, ev);
    } else {
        o->finish = ev->finish_reason;
        o->status = ev->status;
    }
    return 0;
}

/* The whole of `s` matches [0-9]{3}-[a-z]{2}. */
static int is_code(const char *s, size_t n) {
    if (n != 6 || s[3] != '-') return 0;
    for (int i = 0; i < 3; ++i) {
        if (s[i] < '0' || s[i] > '9') return 0;
    }
    return s[4] >= 'a' && s[4] <= 'z' && s[5] >= 'a' && s[5] <= 'z';
}

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* `s` without the JSON whitespace around it equals `want`. */
static int json_text_is(const char *s, size_t n, const char *want) {
    size_t b = 0, e = n;
    while (b < e && is_space(s[b])) ++b;
    while (e > b && is_space(s[e - 1])) --e;
    return e - b == strlen(want) && memcmp(s + b, want, e - b) == 0;
}

/* Ended by the grammar (or the model where the grammar allowed it), not cut short. */
static int ended_by_itself(const outcome *o) {
    return o->status == PREPACK_OK && (o->finish == PREPACK_FINISH_EOS || o->finish == PREPACK_FINISH_STOP);
}

#define CHECK_INVALID(call)                                 \
    do {                                                    \
        CHECK_STATUS(call, PREPACK_INVALID_ARGUMENT);       \
        CHECK(prepack_last_error()[0] != '\0');             \
    } while (0)

static const char *kCode = "[0-9]{3}-[a-z]{2}";
static const char *kYesNo = "root ::= \"yes\" | \"no\"";
static const char *kColour = "{\"enum\": [\"red\", \"green\", \"blue\"]}";

static void check_grammars_alone(void) {
    CHECK(PREPACK_ABI_VERSION == 9);
    CHECK(prepack_abi_version() == PREPACK_ABI_VERSION);
    CHECK_STATUS(prepack_grammar_check(PREPACK_GRAMMAR_NONE, NULL), PREPACK_OK);
    CHECK_STATUS(prepack_grammar_check(PREPACK_GRAMMAR_JSON_OBJECT, NULL), PREPACK_OK);
    CHECK_STATUS(prepack_grammar_check(PREPACK_GRAMMAR_JSON_SCHEMA, kColour), PREPACK_OK);
    CHECK_STATUS(prepack_grammar_check(PREPACK_GRAMMAR_REGEX, kCode), PREPACK_OK);
    CHECK_STATUS(prepack_grammar_check(PREPACK_GRAMMAR_GBNF, kYesNo), PREPACK_OK);

    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_JSON_SCHEMA, "{\"type\": "));
    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_JSON_SCHEMA, NULL));
    CHECK(strstr(prepack_last_error(), "NULL") != NULL);
    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_REGEX, "(a)\\1"));   /* a backreference */
    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_GBNF, "root ::= \"unterminated"));
    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_GBNF, "start ::= \"x\""));   /* no root rule */
    CHECK_INVALID(prepack_grammar_check((prepack_grammar_kind)42, "x"));
    CHECK(strstr(prepack_last_error(), "grammar_kind 42") != NULL);
    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_NONE, "root ::= \"x\""));
    CHECK_INVALID(prepack_grammar_check(PREPACK_GRAMMAR_JSON_OBJECT, "{}"));
}

static void constrained_request(prepack_request *rq, prepack_grammar_kind kind, const char *grammar, uint64_t seed) {
    prepack_request_init(rq);
    rq->prompt = "Once upon a time";
    rq->max_tokens = 48;
    rq->temperature = 1.0f;
    rq->seed = seed;
    rq->grammar_kind = kind;
    rq->grammar = grammar;
}

int main(void) {
    check_grammars_alone();

    char model[1024];
    snprintf(model, sizeof model, "%s/stories260K/stories260K.gguf", PREPACK_MODELS_DIR);
    FILE *f = fopen(model, "rb");
    if (f == NULL) {   /* the checks above still count */
        if (g_failed > 0) return finish();
        return skip("stories260K.gguf is absent (../shared/models)");
    }
    fclose(f);
    prepack_engine_options eo;
    prepack_engine_options_init(&eo);
    eo.model = model;
    eo.threads = 2;
    prepack_engine *e = NULL;
    CHECK_STATUS(prepack_engine_create(&eo, &e), PREPACK_OK);
    if (e == NULL) return finish();

    prepack_request rq;
    outcome o;

    /* A regex, pulled, sampled with several seeds: always the whole pattern. */
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        constrained_request(&rq, PREPACK_GRAMMAR_REGEX, kCode, seed);
        run_pull(e, &rq, &o);
        CHECK(ended_by_itself(&o));
        CHECK(is_code(o.text, o.len));
        if (!is_code(o.text, o.len)) fprintf(stderr, "regex output: \"%s\"\n", o.text);
    }

    /* GBNF by callback; a JSON Schema enum: the JSON of one of its values. */
    constrained_request(&rq, PREPACK_GRAMMAR_GBNF, kYesNo, 7);
    memset(&o, 0, sizeof o);
    CHECK_STATUS(prepack_generate(e, &rq, on_event, &o), PREPACK_OK);
    CHECK(ended_by_itself(&o));
    CHECK(strcmp(o.text, "yes") == 0 || strcmp(o.text, "no") == 0);
    constrained_request(&rq, PREPACK_GRAMMAR_JSON_SCHEMA, kColour, 3);
    run_pull(e, &rq, &o);
    CHECK(ended_by_itself(&o));
    CHECK(json_text_is(o.text, o.len, "\"red\"") || json_text_is(o.text, o.len, "\"green\"") ||
          json_text_is(o.text, o.len, "\"blue\""));
    if (o.len > 0) fprintf(stderr, "json enum output: %s\n", o.text);

    /* Any JSON object: it opens with '{', and closes with '}' when it ended by itself. */
    constrained_request(&rq, PREPACK_GRAMMAR_JSON_OBJECT, NULL, 5);
    rq.max_tokens = 96;
    run_pull(e, &rq, &o);
    CHECK(o.status == PREPACK_OK);
    {
        size_t b = 0, end = o.len;
        while (b < end && is_space(o.text[b])) ++b;
        while (end > b && is_space(o.text[end - 1])) --end;
        CHECK(end > b && o.text[b] == '{');
        if (ended_by_itself(&o)) CHECK(end > b && o.text[end - 1] == '}');
    }

    /* Refused at submission, naming the problem; nothing is started. */
    prepack_stream *s = NULL;
    constrained_request(&rq, PREPACK_GRAMMAR_GBNF, "root ::= \"unterminated", 1);
    CHECK_INVALID(prepack_generate_start(e, &rq, &s));
    constrained_request(&rq, (prepack_grammar_kind)42, "x", 1);
    CHECK_INVALID(prepack_generate_start(e, &rq, &s));
    CHECK(strstr(prepack_last_error(), "grammar_kind") != NULL);
    constrained_request(&rq, PREPACK_GRAMMAR_REGEX, NULL, 1);
    CHECK_INVALID(prepack_generate_start(e, &rq, &s));
    constrained_request(&rq, PREPACK_GRAMMAR_REGEX, kCode, 1);
    rq.ignore_eos = 1;   /* the grammar decides where the output ends */
    CHECK_INVALID(prepack_generate_start(e, &rq, &s));
    CHECK(s == NULL);

    /* A batch: each request under its own grammar; a bad one fails alone. */
    {
        prepack_request code, yes_no, bad, free_text;
        constrained_request(&code, PREPACK_GRAMMAR_REGEX, kCode, 11);
        constrained_request(&yes_no, PREPACK_GRAMMAR_GBNF, kYesNo, 12);
        constrained_request(&bad, PREPACK_GRAMMAR_JSON_SCHEMA, "{\"type\": \"object\", \"minProperties\": \"x\"}", 13);
        constrained_request(&free_text, PREPACK_GRAMMAR_NONE, NULL, 14);
        free_text.max_tokens = 8;
        free_text.temperature = 0.0f;
        const prepack_request *batch[4] = {&code, &yes_no, &bad, &free_text};
        prepack_result *results = NULL;
        CHECK_STATUS(prepack_generate_batch(e, batch, 4, NULL, &results), PREPACK_OK);
        if (results != NULL) {
            CHECK(results[0].status == PREPACK_OK && is_code(results[0].text, results[0].text_len));
            CHECK(results[1].status == PREPACK_OK &&
                  (strcmp(results[1].text, "yes") == 0 || strcmp(results[1].text, "no") == 0));
            CHECK(results[2].status == PREPACK_INVALID_ARGUMENT && results[2].message[0] != '\0');
            CHECK(results[3].status == PREPACK_OK && results[3].n_tokens == 8);
            prepack_results_free(results, 4);
        }
    }

    /* An ABI 8 caller: its struct ends before `grammar`, and the padding
    ** where ABI 9 put grammar_kind holds whatever it holds. It runs
    ** unconstrained: the same greedy tokens as a request without a grammar. */
    {
        outcome plain, old;
        prepack_request_init(&rq);
        rq.prompt = "Once upon a time";
        rq.max_tokens = 12;
        rq.temperature = 0.0f;
        run_pull(e, &rq, &plain);
        CHECK(plain.status == PREPACK_OK && plain.n_tokens == 12);
        rq.grammar_kind = (prepack_grammar_kind)77;
        rq.grammar = kYesNo;
        rq.struct_size = offsetof(prepack_request, grammar);
        run_pull(e, &rq, &old);
        CHECK(old.status == PREPACK_OK && old.n_tokens == plain.n_tokens &&
              memcmp(old.tokens, plain.tokens, plain.n_tokens * sizeof(int32_t)) == 0);
        /* The same bytes with ABI 9's size are read, and refused. */
        rq.struct_size = sizeof rq;
        CHECK_INVALID(prepack_generate_start(e, &rq, &s));
    }

    /* The engine's counters: four specs compiled at least (the bad one too),
    ** the regex's later requests answered from the cache. */
    prepack_stats st;
    prepack_stats_init(&st);
    CHECK_STATUS(prepack_engine_stats(e, &st), PREPACK_OK);
    CHECK(st.grammar_cache_misses >= 4);
    CHECK(st.grammar_cache_hits >= 4);
    CHECK(st.grammar_compile_seconds > 0.0);

    prepack_engine_destroy(e);
    return finish();
}
