package dev.prepack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Structured output on stories260K: every generated text is judged by
 * java.util.regex and {@link MiniJson}, never by prepack; bad grammars and
 * tool choices are refused by name.
 */
class StructuredOutputTest {
    static Engine engine;

    @BeforeAll
    static void setUp() throws IOException {
        EngineTest.casesOrSkip();
        engine = Engine.open(EngineTest.options());
    }

    @AfterAll
    static void tearDown() {
        if (engine != null) {
            engine.close();
        }
    }

    /** Whether the request ended where its grammar let it, rather than cut short. */
    static boolean ended(Result r) {
        return r.finishReason() == FinishReason.STOP || r.finishReason() == FinishReason.EOS;
    }

    /** Greedy, then sampled with a few seeds. */
    static List<Request> variants(Supplier<Request> make) {
        List<Request> out = new ArrayList<>();
        out.add(make.get().temperature(0f));
        for (long seed = 1; seed <= 3; seed++) {
            out.add(make.get().temperature(1f).seed(seed));
        }
        return out;
    }

    @Test
    void regexConstrainsTheWholeText() {
        for (String re : List.of("(yes|no)", "[a-z]{3,8}", "(red|green|blue) [0-9]{2}")) {
            Pattern whole = Pattern.compile(re);
            for (Request q : variants(() -> new Request("Once upon a time").maxTokens(32).regex(re))) {
                Result r = engine.generate(q);
                assertTrue(whole.matcher(r.text()).matches() && ended(r), re + ": " + r.text() + " " + r.finishReason());
            }
            // The general form is the same request.
            Result g = engine.generate(new Request("Once upon a time").maxTokens(32).temperature(0f)
                    .grammar(GrammarKind.REGEX, re));
            assertTrue(whole.matcher(g.text()).matches(), g.text());
        }
        // Unconstrained, the model tells a story: the grammar made the texts match.
        Result free = engine.generate(new Request("Once upon a time").maxTokens(32).temperature(0f));
        assertFalse(Pattern.matches("yes|no|[a-z]{3,8}", free.text()), free.text());
    }

    @Test
    void jsonSchemaTextParsesAndValidates() {
        String schema = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 12},"
                + " \"age\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 99}}, \"required\": [\"name\", \"age\"]}";
        for (Request q : variants(() -> new Request("Once upon a time").maxTokens(96).jsonSchema(schema))) {
            Result r = engine.generate(q);
            assertTrue(ended(r), r.text() + " " + r.finishReason());
            Object v = MiniJson.parse(r.text());
            assertTrue(v instanceof Map, r.text());
            Map<?, ?> m = (Map<?, ?>) v;
            // Strict objects: the two properties the schema names and no other.
            assertEquals(2, m.size(), r.text());
            assertTrue(m.get("name") instanceof String s && s.codePointCount(0, s.length()) <= 12, r.text());
            assertTrue(m.get("age") instanceof Double d && d == Math.floor(d) && d >= 0 && d <= 99, r.text());
        }
    }

    @Test
    void jsonObjectTextIsJsonOrItsPrefix() {
        // stories260K never closes its object within its context: each text,
        // cut short, must still be the start of a JSON object.
        for (Request q : variants(() -> new Request("Once upon a time").maxTokens(48).jsonObject())) {
            Result r = engine.generate(q);
            assertTrue(r.text().strip().startsWith("{"), r.text());
            try {
                assertTrue(MiniJson.parse(r.text()) instanceof Map, r.text());
                assertTrue(ended(r), r.text());
            } catch (MiniJson.JsonError e) {
                assertTrue(e.truncated && r.finishReason() == FinishReason.LENGTH, r.text() + ": " + e.getMessage());
            }
        }
    }

    @Test
    void badGrammarsAreRefusedByName() {
        Object[][] bad = {
            {GrammarKind.REGEX, "(yes", "regex at offset 0"},
            {GrammarKind.GBNF, "root ::= foo", "undefined rule 'foo'"},
            {GrammarKind.JSON_SCHEMA, "{\"type\": \"strin\"}", "\"strin\""},
            {GrammarKind.JSON_SCHEMA, "{\"type\": ", "not valid JSON"},
            {GrammarKind.JSON_OBJECT, "{}", "JSON_OBJECT"},
        };
        for (Object[] b : bad) {
            GrammarKind kind = (GrammarKind) b[0];
            String text = (String) b[1];
            PrepackException e = assertThrows(PrepackException.class, () -> Engine.checkGrammar(kind, text));
            assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
            assertTrue(e.getMessage().contains((String) b[2]), e.getMessage());
            // A request refuses it the same way, before it starts.
            PrepackException run = assertThrows(PrepackException.class,
                    () -> engine.start(new Request("Once").grammar(kind, text)).close());
            assertEquals(e.getMessage(), run.getMessage());
        }
        Engine.checkGrammar(GrammarKind.NONE, null);
        Engine.checkGrammar(GrammarKind.JSON_OBJECT, null);
        Engine.checkGrammar(GrammarKind.REGEX, "[a-z]+");
        Engine.checkGrammar(GrammarKind.GBNF, "root ::= \"a\" | \"b\"");
        Engine.checkGrammar(GrammarKind.JSON_SCHEMA, "{\"type\": \"integer\"}");
    }

    @Test
    void toolChoiceReachesTheLibraryAsMeant() {
        // stories260K has no chat template, so no tools: the library names
        // the choice it received, which checks Java's values against C's.
        Object[][] cases = {
            {new Request("a").toolChoice(ToolChoice.REQUIRED), "tool_choice is REQUIRED but the request has no tools"},
            {new Request("a").toolChoiceFunction("f"), "tool_choice is FUNCTION but the request has no tools"},
            {new Request("a").toolChoice(ToolChoice.NONE).toolChoiceFunction("f"), "tool_choice is NONE, which takes no function"},
            {new Request("a").toolChoice(ToolChoice.FUNCTION), "tool_choice_function is NULL or empty"},
        };
        for (Object[] c : cases) {
            PrepackException e = assertThrows(PrepackException.class, () -> engine.generate((Request) c[0]));
            assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
            assertTrue(e.getMessage().contains((String) c[1]), e.getMessage());
        }
        for (ToolChoice choice : new ToolChoice[] {ToolChoice.AUTO, ToolChoice.NONE}) {
            Result r = engine.generate(new Request("Once").maxTokens(4).toolChoice(choice).parallelToolCalls(false));
            assertEquals(4, r.usage().completionTokens());
            assertTrue(r.toolCalls().isEmpty());
        }
    }
}
