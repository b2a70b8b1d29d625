package dev.prepack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Tool calls and JSON mode on the real chat model SmolLM2-135M-Instruct
 * (PREPACK_CHAT_MODEL); the class skips when it is absent. Arguments are
 * judged by {@link MiniJson}.
 */
class ToolCallTest {
    static Engine engine;

    static final String TOOLS = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
            + " \"description\": \"The weather in a city\", \"parameters\": {\"type\": \"object\","
            + " \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}},"
            + " {\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"The time in a city\","
            + " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}},"
            + " \"required\": [\"city\"]}}}]";

    @BeforeAll
    static void setUp() {
        engine = Engine.open(ChatTest.chatOptionsOrSkip());
    }

    @AfterAll
    static void tearDown() {
        if (engine != null) {
            engine.close();
        }
    }

    static Conversation weather() {
        return new Conversation(Message.user("What is the weather in Paris?")).toolsJson(TOOLS);
    }

    /** A whole call of {@code name} whose arguments are a JSON object with a string "city". */
    static void checkCall(ToolCall c, String name) {
        assertEquals(name, c.name(), c.toString());
        assertTrue(c.id().matches("call_[A-Za-z0-9]{24}"), c.toString());
        Object args = MiniJson.parse(c.arguments());
        assertTrue(args instanceof Map<?, ?> m && m.get("city") instanceof String, c.toString());
    }

    @Test
    void requiredMakesACallWhoseDeltasAddUp() {
        List<ToolCallDelta> deltas = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        Result r;
        try (Stream s = engine.chat(new Request(weather()).maxTokens(96).temperature(0f).toolChoice(ToolChoice.REQUIRED))) {
            s.forEachRemaining(t -> {
                text.append(t.text());
                deltas.addAll(t.toolCallDeltas());
            });
            r = s.result();
        }
        assertTrue(r.finishReason() == FinishReason.STOP || r.finishReason() == FinishReason.EOS, r.finishReason().toString());
        assertFalse(r.toolCalls().isEmpty());
        for (ToolCall c : r.toolCalls()) {
            checkCall(c, "get_weather");
        }
        // The calls are never text; the deltas add up to the calls, their
        // first piece carrying the id and the name.
        assertEquals("", r.text().strip());
        assertEquals(r.text(), text.toString());
        int n = r.toolCalls().size();
        String[] ids = new String[n];
        String[] names = new String[n];
        StringBuilder[] args = new StringBuilder[n];
        for (int i = 0; i < n; i++) {
            ids[i] = "";
            names[i] = "";
            args[i] = new StringBuilder();
        }
        for (ToolCallDelta d : deltas) {
            assertTrue(d.index() >= 0 && d.index() < n, d.toString());
            if (!d.id().isEmpty()) {
                assertEquals("", ids[d.index()], "a second first piece: " + d);
                ids[d.index()] = d.id();
                names[d.index()] = d.name();
            }
            args[d.index()].append(d.arguments());
        }
        for (int i = 0; i < n; i++) {
            ToolCall c = r.toolCalls().get(i);
            assertEquals(c.id(), ids[i]);
            assertEquals(c.name(), names[i]);
            assertEquals(c.arguments(), args[i].toString());
        }
    }

    @Test
    void aNamedFunctionIsCalledAloneAlsoInABatch() {
        Request only = new Request(weather()).maxTokens(96).temperature(0f).toolChoiceFunction("get_time").parallelToolCalls(false);
        Result r = engine.generate(only);
        assertEquals(1, r.toolCalls().size(), r.toolCalls().toString());
        checkCall(r.toolCalls().get(0), "get_time");
        List<Result> rs = engine.generateBatch(List.of(
                new Request(weather()).maxTokens(96).temperature(0f).toolChoice(ToolChoice.REQUIRED), only, new Request("Hi").maxTokens(2)));
        assertFalse(rs.get(0).toolCalls().isEmpty());
        checkCall(rs.get(0).toolCalls().get(0), "get_weather");
        assertEquals(1, rs.get(1).toolCalls().size());
        checkCall(rs.get(1).toolCalls().get(0), "get_time");
        assertTrue(rs.get(2).toolCalls().isEmpty());
        // A grammar cannot shape an answer the tool-call format shapes.
        PrepackException e = assertThrows(PrepackException.class,
                () -> engine.chat(new Request(weather()).toolChoice(ToolChoice.REQUIRED).jsonObject()).close());
        assertTrue(e.getMessage().contains("grammar_kind conflicts with tool_choice REQUIRED"), e.getMessage());
    }

    @Test
    void jsonObjectChatParses() {
        Conversation c = new Conversation(Message.user("Reply with a JSON object with one key \"answer\".\nWhat is 2+2?"));
        Result r = engine.generate(new Request(c).maxTokens(64).temperature(0f).jsonObject());
        assertTrue(r.finishReason() == FinishReason.STOP || r.finishReason() == FinishReason.EOS, r.text());
        assertTrue(MiniJson.parse(r.text()) instanceof Map, r.text());
    }
}
