package dev.prepack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Strings cross JNI as real UTF-8 (prepack.i), not JNI's modified UTF-8, in
 * which a character outside the BMP is two 3-byte surrogates that the library
 * rejects as invalid UTF-8.
 */
class Utf8Test {
    // Outside the BMP (emoji, a skin-tone modifier, a musical symbol) and CJK:
    // stories260K has no piece for any of them, so each byte is a byte-fallback token.
    static final String WIDE = "🙂世界👋🏽𝄞";
    static final String[] TEXTS = {WIDE, "Once upon a time, 🙂 said 世界 👋🏽!", "é€ 😀😀", "🙂", "🦙 café 𝄞"};

    static Engine engine;
    static List<EngineTest.Case> cases;

    @BeforeAll
    static void setUp() throws IOException {
        cases = EngineTest.casesOrSkip();
        engine = Engine.open(EngineTest.options());
    }

    @AfterAll
    static void tearDown() {
        if (engine != null) {
            engine.close();
        }
    }

    /** stories260K's ids of byte-fallback text: the dummy-prefix space (410), then byte b as id b + 3. */
    static int[] byteIds(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[utf8.length + 1];
        ids[0] = 410;
        for (int i = 0; i < utf8.length; i++) {
            ids[i + 1] = (utf8[i] & 0xff) + 3;
        }
        return ids;
    }

    @Test
    void tokenizeSeesTheUtf8Bytes() {
        int[] ids = engine.tokenize(WIDE, false, false);
        assertArrayEquals(byteIds(WIDE), ids);
        assertEquals(WIDE, engine.detokenize(Arrays.copyOfRange(ids, 1, ids.length)));   // the bytes alone
    }

    @Test
    void aLoneIdOfPartialUtf8DecodesWithoutError() {
        // 🦙 is F0 9F A6 99: byte-fallback ids 243 162 169 156. One id alone
        // is a partial character: the library hands its byte out as it is and
        // Java's decoder makes it U+FFFD, never a JNI error or a crash.
        int[] llama = Arrays.copyOfRange(byteIds("🦙"), 1, 5);
        assertArrayEquals(new int[] {0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3}, llama);
        for (int id : llama) {
            assertEquals("\uFFFD", engine.detokenize(new int[] {id}), "id " + id);
        }
        assertEquals("\uFFFD", engine.detokenize(Arrays.copyOfRange(llama, 0, 3)));   // a truncated character
        assertEquals("🦙", engine.detokenize(llama));                                  // whole again
        assertEquals("a\uFFFDb", engine.detokenize(new int[] {byteIds("a")[1], 0xF0 + 3, byteIds("b")[1]}));
    }

    @Test
    void textRoundTripsThroughTokenizeAndDetokenize() {
        for (String s : TEXTS) {
            assertEquals(s, engine.detokenize(engine.tokenize(s, true, false)), s);
            assertEquals(" " + s, engine.detokenize(engine.tokenize(s, false, false)), s);   // no BOS: every byte
        }
    }

    @Test
    void promptsStopStringsAndMessagesCarryTheText() {
        for (String s : TEXTS) {
            Request r = new Request(s).maxTokens(2).ignoreEos(true).temperature(0f).stop("🙂 " + s);
            Result res = engine.generate(r);
            assertEquals(engine.tokenize(s, true, false).length, res.usage().promptTokens(), s);
            assertEquals(2, res.tokens().length);
            assertEquals(engine.detokenize(res.tokens()), res.text());   // pieces decoded by Java
            StringBuilder streamed = new StringBuilder();
            try (Stream st = engine.start(r)) {
                st.forEachRemaining(t -> streamed.append(t.text()));
            }
            assertEquals(res.text(), streamed.toString());
        }
        // The library's message quotes the schedule it rejects.
        PrepackException e = assertThrows(PrepackException.class,
                () -> engine.generate(new Request("Once").lazy(true).lazySchedule(WIDE)));
        assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains("'" + WIDE + "'"), e.getMessage());
    }

    @Test
    void everyNativeStringIsUtf8Bytes() {
        // The value types' fields (Token.text, Result.text, Request.prompt and
        // stop, ...) round-trip through the same typemaps as tokenize.
        dev.prepack.swig.Token t = new dev.prepack.swig.Token();
        try {
            t.setText(WIDE);
            assertEquals(WIDE, t.getText());
        } finally {
            t.delete();
        }
        dev.prepack.swig.StringVector v = new dev.prepack.swig.StringVector(List.of(WIDE, ""));
        try {
            assertEquals(List.of(WIDE, ""), List.copyOf(v));
        } finally {
            v.delete();
        }
        // No native method takes or returns a java.lang.String: each goes
        // through byte[] and Java's UTF-8 codec (a new string member included).
        int strings = 0;
        for (Method m : dev.prepack.swig.prepackJNI.class.getDeclaredMethods()) {
            assertTrue(m.getReturnType() != String.class, m.toString());
            for (Class<?> p : m.getParameterTypes()) {
                assertTrue(p != String.class, m.toString());
            }
            if (m.getName().equals("Token_text_get")) {
                assertEquals(byte[].class, m.getReturnType());
                strings++;
            }
        }
        assertEquals(1, strings);
    }
}
