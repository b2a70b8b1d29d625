package dev.prepack;

/**
 * The kind of grammar a request's generated text must be a sentence of
 * (structured output; prepack_grammar_kind, ordinal() is the C value). See
 * {@link Request#grammar(GrammarKind, String)}.
 */
public enum GrammarKind {
    /** Unconstrained (the default). */
    NONE,
    /** Any JSON object (OpenAI's {@code {"type": "json_object"}}); takes no text. */
    JSON_OBJECT,
    /** A JSON Schema's JSON text; objects allow no property the schema does not name. */
    JSON_SCHEMA,
    /** A regular expression the whole text matches (JSON Schema's {@code pattern} syntax). */
    REGEX,
    /** llama.cpp's GBNF, start rule {@code root}. */
    GBNF
}
