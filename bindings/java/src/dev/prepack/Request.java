package dev.prepack;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One generation request: a prompt (text or token ids) or a conversation for
 * the model's chat template. Unset values keep the library's defaults
 * (max 128 tokens, temperature 1, no top-k/top-p/min-p, no penalty).
 * Setters return this, for chaining; the library checks the values. Every
 * form runs everywhere: {@link Engine#start}, {@link Engine#generate},
 * {@link Engine#generateBatch} and, for conversations, {@link Engine#chat}.
 */
public final class Request {
    private final String prompt;
    private final int[] promptTokens;
    private final Conversation conversation;
    // null: the library's default
    private Boolean addBos;
    private Boolean parseSpecial;
    private Integer maxTokens;
    private Float temperature;
    private Integer topK;
    private Float topP;
    private Float minP;
    private Float repetitionPenalty;
    private Long seed;
    private final List<String> stop = new ArrayList<>();
    private Integer logprobs;
    private Boolean ignoreEos;
    private Long deadlineMs;
    private Boolean lazy;
    private Float lazyKeepRatio;
    private String lazySchedule;
    private Integer lazyReviveLimit;
    private GrammarKind grammarKind;
    private String grammar;
    private ToolChoice toolChoice;
    private String toolChoiceFunction;
    private Boolean parallelToolCalls;

    /**
     * A request for UTF-8 text (BOS added before it unless {@link #addBos(boolean)} says not).
     * The empty string is a valid prompt (BOS alone).
     *
     * @throws NullPointerException if {@code prompt} is null
     */
    public Request(String prompt) {
        this.prompt = Objects.requireNonNull(prompt, "prompt");
        this.promptTokens = null;
        this.conversation = null;
    }

    /**
     * A request for token ids, taken as given (no BOS added).
     *
     * @throws NullPointerException if {@code promptTokens} is null
     * @throws PrepackException INVALID_ARGUMENT if it is empty, as the C
     *     library and prepackd answer an empty token prompt (for BOS alone,
     *     pass its id, or use {@code new Request("")})
     */
    public Request(int[] promptTokens) {
        Objects.requireNonNull(promptTokens, "promptTokens");
        if (promptTokens.length == 0) {
            throw new PrepackException(StatusCode.INVALID_ARGUMENT, "prompt_tokens is empty");
        }
        this.prompt = null;
        this.promptTokens = promptTokens.clone();
        this.conversation = null;
    }

    /**
     * A chat request: the conversation rendered by the model's chat template
     * (a copy is taken), its markup as control tokens and its messages' text
     * as text. The generated text of a model that thinks ({@code <think>})
     * comes apart, as {@link Token#reasoning()}. {@link #parseSpecial(boolean)}
     * on is INVALID_ARGUMENT for a chat request: message text never becomes
     * control tokens.
     *
     * @throws NullPointerException if {@code conversation} is null
     */
    public Request(Conversation conversation) {
        this.prompt = null;
        this.promptTokens = null;
        this.conversation = Objects.requireNonNull(conversation, "conversation").copy();
    }

    /** Whether this is a chat request (made from a {@link Conversation}). */
    public boolean isChat() {
        return conversation != null;
    }

    /**
     * BOS (and EOS) as the vocabulary says; on by default. Off, an empty
     * prompt is INVALID_ARGUMENT; on, it is BOS alone.
     */
    public Request addBos(boolean on) {
        addBos = on;
        return this;
    }

    /**
     * Control-token text in the prompt, such as {@code <|eot_id|>}, becomes
     * that one token; off (the default) it is ordinary text, the safe choice
     * for untrusted input.
     */
    public Request parseSpecial(boolean on) {
        parseSpecial = on;
        return this;
    }

    /** Tokens to generate, at least 1. */
    public Request maxTokens(int n) {
        maxTokens = n;
        return this;
    }

    /** 0 = greedy. */
    public Request temperature(float t) {
        temperature = t;
        return this;
    }

    public Request topK(int k) {
        topK = k;
        return this;
    }

    public Request topP(float p) {
        topP = p;
        return this;
    }

    public Request minP(float p) {
        minP = p;
        return this;
    }

    public Request repetitionPenalty(float p) {
        repetitionPenalty = p;
        return this;
    }

    /** Same seed, same tokens. */
    public Request seed(long s) {
        seed = s;
        return this;
    }

    /**
     * Ends generation when this text appears (it is not in the output).
     *
     * @throws NullPointerException if {@code s} is null
     */
    public Request stop(String s) {
        stop.add(Objects.requireNonNull(s, "stop"));
        return this;
    }

    /** Alternatives reported per token, 0..20. */
    public Request logprobs(int n) {
        logprobs = n;
        return this;
    }

    public Request ignoreEos(boolean on) {
        ignoreEos = on;
        return this;
    }

    /** Milliseconds from submission; 0 = none. */
    public Request deadlineMs(long ms) {
        deadlineMs = ms;
        return this;
    }

    /** LazyLLM: prune prompt tokens the next token barely attends to. */
    public Request lazy(boolean on) {
        lazy = on;
        return this;
    }

    /** LazyLLM: how hard to prune, in (0, 1]; unset = the default schedule. */
    public Request lazyKeepRatio(float ratio) {
        lazyKeepRatio = ratio;
        return this;
    }

    /** LazyLLM: an explicit schedule "LAYER:KEEP,..." (overrides the keep ratio). */
    public Request lazySchedule(String schedule) {
        lazySchedule = schedule;
        return this;
    }

    /**
     * LazyLLM: how many pruned prompt tokens one decode step may bring back;
     * unset or 0 = the engine's default bound, -1 = no bound.
     */
    public Request lazyReviveLimit(int limit) {
        lazyReviveLimit = limit;
        return this;
    }

    /**
     * Structured output: the generated text is a sentence of this grammar
     * (tokens that cannot continue it are masked before sampling, and the text
     * ends only where the grammar may end). {@code text} is the JSON Schema,
     * regex or GBNF; null for {@link GrammarKind#NONE} and
     * {@link GrammarKind#JSON_OBJECT}, which take none. A bad grammar makes
     * the request fail with INVALID_ARGUMENT naming the problem, as
     * {@link Engine#checkGrammar(GrammarKind, String)} says.
     *
     * @throws NullPointerException if {@code kind} is null
     */
    public Request grammar(GrammarKind kind, String text) {
        grammarKind = Objects.requireNonNull(kind, "kind");
        grammar = text;
        return this;
    }

    /** The text is any JSON object (OpenAI's {@code {"type": "json_object"}}). */
    public Request jsonObject() {
        return grammar(GrammarKind.JSON_OBJECT, null);
    }

    /** The text is JSON valid under this JSON Schema (objects allow no property it does not name). */
    public Request jsonSchema(String schema) {
        return grammar(GrammarKind.JSON_SCHEMA, Objects.requireNonNull(schema, "schema"));
    }

    /** The whole text matches this regular expression (JSON Schema's {@code pattern} syntax). */
    public Request regex(String regex) {
        return grammar(GrammarKind.REGEX, Objects.requireNonNull(regex, "regex"));
    }

    /** The text is a sentence of this llama.cpp GBNF grammar (start rule {@code root}). */
    public Request gbnf(String grammar) {
        return grammar(GrammarKind.GBNF, Objects.requireNonNull(grammar, "grammar"));
    }

    /**
     * Whether and which tools a chat request whose conversation has tools may
     * call; unset: AUTO (or FUNCTION when {@link #toolChoiceFunction(String)}
     * names one). The calls come in {@link Result#toolCalls()} and, as they
     * are generated, in {@link Token#toolCallDeltas()}, never in the text.
     * With tools, any choice but NONE excludes a grammar and ignoreEos.
     *
     * @throws NullPointerException if {@code choice} is null
     */
    public Request toolChoice(ToolChoice choice) {
        toolChoice = Objects.requireNonNull(choice, "choice");
        return this;
    }

    /** The one tool the answer calls ({@link ToolChoice#FUNCTION}, which an unset choice becomes). */
    public Request toolChoiceFunction(String name) {
        toolChoiceFunction = Objects.requireNonNull(name, "name");
        return this;
    }

    /** On by default: an answer may make several calls; off: at most one. */
    public Request parallelToolCalls(boolean on) {
        parallelToolCalls = on;
        return this;
    }

    /** A native copy; the caller deletes it. */
    dev.prepack.swig.Request toNative() {
        dev.prepack.swig.Request n = new dev.prepack.swig.Request();
        if (conversation != null) {
            dev.prepack.swig.Conversation c = conversation.toNative();
            n.setChat(c);   // copies
            c.delete();
            n.setHasChat(true);
        } else if (promptTokens != null) {
            dev.prepack.swig.IntVector ids = new dev.prepack.swig.IntVector(promptTokens);
            n.setPromptTokens(ids);   // copies
            ids.delete();
        } else {
            n.setPrompt(prompt);   // never null (the constructors)
        }
        if (addBos != null) n.setAddBos(addBos);
        if (parseSpecial != null) n.setParseSpecial(parseSpecial);
        if (maxTokens != null) n.setMaxTokens(maxTokens);
        if (temperature != null) n.setTemperature(temperature);
        if (topK != null) n.setTopK(topK);
        if (topP != null) n.setTopP(topP);
        if (minP != null) n.setMinP(minP);
        if (repetitionPenalty != null) n.setRepetitionPenalty(repetitionPenalty);
        if (seed != null) n.setSeed(seed);
        if (!stop.isEmpty()) {
            dev.prepack.swig.StringVector v = new dev.prepack.swig.StringVector(stop);
            n.setStop(v);   // copies
            v.delete();
        }
        if (logprobs != null) n.setLogprobs(logprobs);
        if (ignoreEos != null) n.setIgnoreEos(ignoreEos);
        if (deadlineMs != null) n.setDeadlineMs(deadlineMs);
        if (lazy != null) n.setLazy(lazy);
        if (lazyKeepRatio != null) n.setLazyKeepRatio(lazyKeepRatio);
        if (lazySchedule != null) n.setLazySchedule(lazySchedule);
        if (lazyReviveLimit != null) n.setLazyReviveLimit(lazyReviveLimit);
        if (grammarKind != null) n.setGrammarKind(grammarKind.ordinal());
        if (grammar != null) n.setGrammar(grammar);
        if (toolChoice != null) {
            n.setToolChoice(toolChoice.ordinal());
        } else if (toolChoiceFunction != null) {
            n.setToolChoice(ToolChoice.FUNCTION.ordinal());   // naming a tool means calling it, as OpenAI's
        }
        if (toolChoiceFunction != null) n.setToolChoiceFunction(toolChoiceFunction);
        if (parallelToolCalls != null) n.setParallelToolCalls(parallelToolCalls);
        return n;
    }
}
