package dev.prepack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * stories260K has no chat template: chat requests fail until the engine
 * option chatTemplateFile gives one; one that opens {@code <think>} makes all
 * the generated text thinking.
 */
class ChatTemplateFileTest {
    static final String THINK_TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"
            + "{% if add_generation_prompt %}<think>{% endif %}";

    @BeforeAll
    static void setUp() throws IOException {
        EngineTest.casesOrSkip();
    }

    static Request once() {
        return new Request(new Conversation(Message.user("Once upon a time"))).temperature(0f).maxTokens(8)
                .ignoreEos(true);
    }

    @Test
    void aModelWithoutATemplateIsAFailedPrecondition() {
        try (Engine engine = Engine.open(EngineTest.options())) {
            PrepackException e = assertThrows(PrepackException.class, () -> engine.chat(once()).close());
            assertEquals(StatusCode.FAILED_PRECONDITION, e.getStatus());
            assertTrue(e.getMessage().contains("--chat-template-file"), e.getMessage());
            e = assertThrows(PrepackException.class, () -> engine.renderChat(new Conversation(Message.user("Hi"))));
            assertEquals(StatusCode.FAILED_PRECONDITION, e.getStatus());
        }
    }

    @Test
    void aTemplateFileThatOpensThinkMakesItAllReasoning(@TempDir Path dir) throws IOException {
        Path template = dir.resolve("think.jinja");
        Files.writeString(template, THINK_TEMPLATE);
        try (Engine engine = Engine.open(EngineTest.options().chatTemplateFile(template.toString()))) {
            assertEquals("Once upon a time<think>", engine.renderChat(new Conversation(Message.user("Once upon a time"))).text());
            StringBuilder text = new StringBuilder();
            StringBuilder reasoning = new StringBuilder();
            try (Stream s = engine.chat(once())) {
                s.forEachRemaining(t -> {
                    text.append(t.text());
                    reasoning.append(t.reasoning());
                });
                Result r = s.result();
                assertEquals("", text.toString());
                assertEquals("", r.text());
                assertTrue(reasoning.length() > 0);
                assertEquals(reasoning.toString(), r.reasoning());
                assertEquals(8, r.usage().completionTokens());
                assertEquals(r.usage().completionTokens(), r.usage().reasoningTokens());
            }
            // The batch's results carry the thinking too.
            Result b = engine.generateBatch(java.util.List.of(once())).get(0);
            assertEquals("", b.text());
            assertEquals(reasoning.toString(), b.reasoning());
            assertEquals(8, b.usage().reasoningTokens());
        }
    }
}
