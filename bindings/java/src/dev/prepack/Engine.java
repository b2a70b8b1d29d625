package dev.prepack;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A loaded model and its scheduler. Thread-safe: requests from all threads
 * are batched together. Close it (try-with-resources) to free the model.
 *
 * <pre>{@code
 * try (Engine engine = Engine.open(new EngineOptions("stories260K.gguf"))) {
 *     System.out.println(engine.generate(new Request("Once upon a time").maxTokens(32)).text());
 * }
 * }</pre>
 */
public final class Engine implements AutoCloseable {
    private final Handle<dev.prepack.swig.Engine> handle;

    private Engine(dev.prepack.swig.Engine engine) {
        handle = new Handle<>(engine, "engine");
    }

    /** Loads the model; PrepackException NOT_FOUND, INVALID_ARGUMENT, ... on failure. */
    public static Engine open(EngineOptions options) {
        dev.prepack.swig.EngineOptions n = options.toNative();
        try {
            return new Engine(dev.prepack.swig.Engine.open(n));
        } finally {
            n.delete();
        }
    }

    /** The library's version, e.g. "0.1.0". */
    public static String version() {
        return dev.prepack.swig.prepack.version();
    }

    /**
     * Checks a grammar without an engine or a model: returns when a request
     * with it would be accepted, else throws PrepackException INVALID_ARGUMENT
     * naming the problem (a schema's keyword and JSON pointer, a GBNF line
     * and column, a regex's offset, an unknown kind, text for JSON_OBJECT).
     * {@code text} as in {@link Request#grammar(GrammarKind, String)}.
     *
     * @throws NullPointerException if {@code kind} is null
     */
    public static void checkGrammar(GrammarKind kind, String text) {
        Objects.requireNonNull(kind, "kind");
        dev.prepack.swig.prepack.checkGrammar(kind.ordinal(), text == null ? "" : text);
    }

    /** Starts a request and returns its token stream; close the stream when done. */
    public Stream start(Request request) {
        dev.prepack.swig.Request n = request.toNative();
        try {
            return new Stream(handle.call(e -> e.start(n)));
        } finally {
            n.delete();
        }
    }

    /**
     * Starts a chat request ({@link Request#Request(Conversation)}) and returns
     * its token stream, as {@link #start(Request)} does; close the stream when
     * done. Each token's {@link Token#reasoning()} carries a thinking model's
     * {@code <think>} text apart from its {@link Token#text()}, and the
     * result's {@link Usage#reasoningTokens()} counts those tokens.
     * PrepackException FAILED_PRECONDITION when the model has no chat template
     * (give one with {@link EngineOptions#chatTemplateFile(String)}),
     * INVALID_ARGUMENT for a bad message, bad JSON, a template error, or a
     * request that is not a chat request.
     */
    public Stream chat(Request request) {
        if (!request.isChat()) {
            throw new PrepackException(StatusCode.INVALID_ARGUMENT,
                    "not a chat request: make it with new Request(Conversation)");
        }
        return start(request);
    }

    /**
     * The prompt a chat request of this conversation gets: the rendered text
     * and its token ids. Errors as {@link #chat(Request)}.
     */
    public ChatPrompt renderChat(Conversation conversation) {
        dev.prepack.swig.Conversation n = conversation.toNative();
        try {
            dev.prepack.swig.ChatPrompt p = handle.call(e -> e.renderChat(n));
            try {
                return new ChatPrompt(p);
            } finally {
                p.delete();
            }
        } finally {
            n.delete();
        }
    }

    /** Runs a request to its end; throws if it ends with a status other than OK. */
    public Result generate(Request request) {
        dev.prepack.swig.Request n = request.toNative();
        try {
            dev.prepack.swig.Result r = handle.call(e -> e.generate(n));
            try {
                return new Result(r);
            } finally {
                r.delete();
            }
        } finally {
            n.delete();
        }
    }

    /**
     * Runs requests as one offline batch (under Policy.BATCHLLM shared prefixes
     * are computed once; chat requests among them share their common system
     * prompt). Results come in request order; a request that fails reports it
     * in its result's status rather than by throwing.
     */
    public List<Result> generateBatch(List<Request> requests) {
        dev.prepack.swig.RequestVector in = new dev.prepack.swig.RequestVector();
        try {
            for (Request r : requests) {
                dev.prepack.swig.Request n = r.toNative();
                in.add(n);   // copies
                n.delete();
            }
            dev.prepack.swig.ResultVector out = handle.call(e -> e.generateBatch(in));
            try {
                List<Result> results = new ArrayList<>(out.size());
                for (int i = 0; i < out.size(); i++) {
                    results.add(new Result(out.get(i)));   // get() views the vector's element
                }
                return results;
            } finally {
                out.delete();
            }
        } finally {
            in.delete();
        }
    }

    /**
     * The token ids of UTF-8 text. With {@code addSpecial}, BOS (and EOS) are
     * added as the model's vocabulary says. With {@code parseSpecial}, the text
     * of a control token such as {@code <|eot_id|>} becomes that one token;
     * without it such text is ordinary text, the safe choice for untrusted
     * input. PrepackException INVALID_ARGUMENT for invalid UTF-8,
     * FAILED_PRECONDITION once the engine is closed.
     */
    public int[] tokenize(String text, boolean addSpecial, boolean parseSpecial) {
        Objects.requireNonNull(text, "text");
        dev.prepack.swig.IntVector ids = handle.call(e -> e.tokenize(text, addSpecial, parseSpecial));
        try {
            return Convert.ints(ids);
        } finally {
            ids.delete();
        }
    }

    /**
     * The text of token ids, exactly: every id gives its bytes and control
     * tokens (BOS, EOS) none, except that the first piece after a BOS drops the
     * space SentencePiece put before the text, so
     * {@code detokenize(tokenize(s, true, false))} equals {@code s}.
     * PrepackException INVALID_ARGUMENT for an id outside the vocabulary,
     * FAILED_PRECONDITION once the engine is closed.
     */
    public String detokenize(int[] ids) {
        dev.prepack.swig.IntVector in = new dev.prepack.swig.IntVector(ids);
        try {
            return handle.call(e -> e.detokenize(in));
        } finally {
            in.delete();
        }
    }

    /**
     * Stops the engine and frees the model. Running requests end with
     * CANCELLED; a generateBatch in flight is waited for. Idempotent; later
     * calls throw FAILED_PRECONDITION.
     */
    @Override
    public void close() {
        handle.close(dev.prepack.swig.Engine::close, dev.prepack.swig.Engine::delete);
    }
}
