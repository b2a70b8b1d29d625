namespace Prepack
{
    /// <summary>
    /// The kind of grammar a request's generated text must be a sentence of
    /// (structured output; prepack_grammar_kind). See Request.GrammarKind.
    /// </summary>
    public enum GrammarKind
    {
        None = 0,         // unconstrained (the default)
        JsonObject = 1,   // any JSON object (OpenAI's {"type": "json_object"}); takes no text
        JsonSchema = 2,   // a JSON Schema's JSON text; objects allow no property it does not name
        Regex = 3,        // a regular expression the whole text matches (JSON Schema's pattern syntax)
        Gbnf = 4,         // llama.cpp's GBNF, start rule "root"
    }
}
