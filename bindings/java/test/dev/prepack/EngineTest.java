package dev.prepack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java binding against the real stories260K model: greedy output equals
 * llama2.c's reference ids, and streaming, batching, cancellation, errors and
 * closing behave. PREPACK_MODEL and PREPACK_REFERENCE name the files.
 */
class EngineTest {
    /** One case of reference.json: promptIds is llama2.c's encoding, BOS (id 1) first. */
    record Case(String prompt, int[] promptIds, int[] greedyIds) {}

    static Engine engine;
    static List<Case> cases;

    static EngineOptions options() {
        // One thread and a small KV budget: the test machine is small and shared.
        return new EngineOptions(System.getenv("PREPACK_MODEL")).threads(1).kvBudgetBytes(8L << 20);
    }

    /** reference.json's cases; skips the calling test class when the model is absent. */
    static List<Case> casesOrSkip() throws IOException {
        String model = System.getenv("PREPACK_MODEL");
        String reference = System.getenv("PREPACK_REFERENCE");
        boolean present = model != null && reference != null && Files.exists(Path.of(model))
                && Files.exists(Path.of(reference));
        if (!present) {
            System.out.println("SKIP: stories260K model not found (" + model + ")");
        }
        Assumptions.assumeTrue(present, "stories260K model not found");
        return readCases(Files.readString(Path.of(reference)));
    }

    @BeforeAll
    static void setUp() throws IOException {
        cases = casesOrSkip();
        engine = Engine.open(options());
    }

    @AfterAll
    static void tearDown() {
        if (engine != null) {
            engine.close();
        }
    }

    // reference.json's cases: each "prompt" string, then its "prompt_ids" and "greedy_ids" arrays.
    static List<Case> readCases(String json) {
        Pattern p = Pattern.compile("\"prompt\"\\s*:\\s*\"([^\"]*)\".*?\"prompt_ids\"\\s*:\\s*\\[([^\\]]*)\\]"
                + ".*?\"greedy_ids\"\\s*:\\s*\\[([^\\]]*)\\]", Pattern.DOTALL);
        List<Case> out = new ArrayList<>();
        for (Matcher m = p.matcher(json); m.find(); ) {
            out.add(new Case(m.group(1), parseIds(m.group(2)), parseIds(m.group(3))));
        }
        assertTrue(out.size() >= 2, "reference.json has its cases");
        return out;
    }

    static int[] parseIds(String list) {
        String[] ids = list.trim().split("\\s*,\\s*");
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Integer.parseInt(ids[i]);
        }
        return out;
    }

    static Request greedy(Case c) {
        return new Request(c.prompt()).maxTokens(c.greedyIds().length).temperature(0f);
    }

    static int[] ids(List<Token> tokens) {
        return tokens.stream().mapToInt(Token::id).toArray();
    }

    @Test
    void greedyGenerationEqualsReference() {
        for (Case c : cases) {
            Result r = engine.generate(greedy(c));
            assertArrayEquals(c.greedyIds(), r.tokens(), c.prompt());
            assertEquals(FinishReason.LENGTH, r.finishReason());
            assertEquals(StatusCode.OK, r.status());
            assertEquals(c.greedyIds().length, r.usage().completionTokens());
        }
    }

    @Test
    void lazyOptionsReachTheEngine() {
        // Keep ratio 1.0 scores every token but keeps them all: the reference ids.
        Case c = cases.get(0);
        Result kept = engine.generate(greedy(c).lazy(true).lazyKeepRatio(1.0f));
        assertArrayEquals(c.greedyIds(), kept.tokens());
        assertEquals(0.0, kept.usage().prunedFraction());
        PrepackException e = assertThrows(PrepackException.class,
                () -> engine.generate(greedy(c).lazy(true).lazySchedule("3:0.5,1:0.2")));
        assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains("1:0.2"), e.getMessage());
    }

    @Test
    void streamingYieldsTheFullResult() {
        Case c = cases.get(0);
        Result full = engine.generate(greedy(c));
        List<Token> got = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        try (Stream s = engine.start(greedy(c))) {
            s.forEachRemaining(t -> {
                got.add(t);
                text.append(t.text());
            });
            assertArrayEquals(full.tokens(), ids(got));
            assertEquals(full.text(), text.toString());
            assertArrayEquals(full.tokens(), s.result().tokens());
            assertEquals(FinishReason.LENGTH, s.result().finishReason());
        }
    }

    @Test
    void logprobsAndStopStrings() {
        try (Stream s = engine.start(greedy(cases.get(0)).logprobs(3))) {
            s.forEachRemaining(t -> {
                // Greedy picks the most likely token, so it heads the alternatives.
                assertEquals(3, t.topIds().length);
                assertEquals(3, t.topLogprobs().length);
                assertEquals(t.id(), t.topIds()[0]);
            });
        }
        Result r = engine.generate(greedy(cases.get(0)).stop("Lily"));   // in the reference continuation
        assertEquals(FinishReason.STOP, r.finishReason());
        assertTrue(r.text().endsWith("named ") && !r.text().contains("Lily"), r.text());
    }

    @Test
    void batchEqualsSingleRuns() {
        List<Request> batch = new ArrayList<>();
        for (Case c : cases) {
            batch.add(greedy(c));
        }
        batch.add(greedy(cases.get(0)));   // a repeat shares its whole prompt
        List<Result> results = engine.generateBatch(batch);
        assertEquals(batch.size(), results.size());
        for (int i = 0; i < batch.size(); i++) {
            Case c = cases.get(i % cases.size());
            assertArrayEquals(engine.generate(greedy(c)).tokens(), results.get(i).tokens());
            assertArrayEquals(c.greedyIds(), results.get(i).tokens());
        }
    }

    @Test
    void batchReportsBadRequestsPerResult() {
        List<Result> results = engine.generateBatch(List.of(greedy(cases.get(0)), new Request("x").maxTokens(0)));
        assertEquals(StatusCode.OK, results.get(0).status());
        assertEquals(StatusCode.INVALID_ARGUMENT, results.get(1).status());
        assertTrue(results.get(1).message().contains("max_tokens"), results.get(1).message());
    }

    @Test
    void cancelFromAnotherThreadEndsTheStream() throws InterruptedException {
        // The longest run the context allows, so it is still going when cancelled.
        Request long_ = new Request(cases.get(0).prompt()).maxTokens(500).ignoreEos(true).temperature(0f);
        try (Stream s = engine.start(long_)) {
            CountDownLatch first = new CountDownLatch(1);
            Thread canceller = new Thread(() -> {
                try {
                    first.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                s.cancel();
            });
            canceller.start();
            int n = 0;
            PrepackException e = null;
            try {
                while (s.hasNext()) {
                    s.next();
                    if (++n == 1) {
                        first.countDown();
                    }
                }
            } catch (PrepackException ex) {
                e = ex;
            }
            canceller.join();
            assertTrue(e != null, "the stream ended with an error");
            assertEquals(StatusCode.CANCELLED, e.getStatus());
            assertEquals(FinishReason.CANCELLED, s.result().finishReason());
            assertTrue(n < 500, "stopped early: " + n);
        }
    }

    @Test
    void invalidArgumentsThrowWithTheMessage() {
        PrepackException e = assertThrows(PrepackException.class,
                () -> engine.generate(new Request("Once").temperature(-1f)));
        assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains("temperature"), e.getMessage());

        e = assertThrows(PrepackException.class, () -> engine.start(new Request("Once").maxTokens(0)));
        assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains("max_tokens"), e.getMessage());

        e = assertThrows(PrepackException.class, () -> Engine.open(new EngineOptions("/no/such/model.gguf")));
        assertEquals(StatusCode.NOT_FOUND, e.getStatus());
    }

    @Test
    void tokenizeEqualsReferenceAndDetokenizeRoundTrips() {
        for (Case c : cases) {
            assertTrue(c.promptIds().length >= 2 && c.promptIds()[0] == 1, "prompt_ids start with BOS");
            assertArrayEquals(c.promptIds(), engine.tokenize(c.prompt(), true, false), c.prompt());
            int[] bare = engine.tokenize(c.prompt(), false, false);
            assertArrayEquals(Arrays.copyOfRange(c.promptIds(), 1, c.promptIds().length), bare, c.prompt());
            // Decoding is exact: without a BOS every byte is kept, SentencePiece's
            // dummy-prefix space too; after a BOS that space is dropped.
            assertEquals(" " + c.prompt(), engine.detokenize(bare));
            assertEquals(c.prompt(), engine.detokenize(c.promptIds()));
        }
        assertEquals("", engine.detokenize(new int[0]));
        for (int[] bad : new int[][] {{1, 1 << 30}, {-1}, {512}}) {   // stories260K has 512 ids
            PrepackException e = assertThrows(PrepackException.class, () -> engine.detokenize(bad));
            assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
            assertTrue(e.getMessage().contains("vocabulary"), e.getMessage());
        }
    }

    @Test
    void parseSpecialMakesControlTextOneToken() {
        // stories260K's id 2 is the control token </s> (its README).
        assertArrayEquals(new int[] {2}, engine.tokenize("</s>", false, true));
        int[] plain = engine.tokenize("</s>", false, false);
        assertTrue(plain.length >= 2 && Arrays.stream(plain).noneMatch(id -> id == 2), Arrays.toString(plain));
        // The request option reaches the engine: BOS + </s> is two prompt tokens.
        Request req = new Request("</s>").maxTokens(1).ignoreEos(true).temperature(0f);
        assertEquals(2, engine.generate(req.parseSpecial(true)).usage().promptTokens());
        assertEquals(1 + plain.length, engine.generate(req.parseSpecial(false)).usage().promptTokens());
    }

    @Test
    void anEmptyPromptWithBosGenerates() {
        Result r = engine.generate(new Request("").maxTokens(4).ignoreEos(true).temperature(0f));
        assertEquals(1, r.usage().promptTokens());   // BOS alone
        assertTrue(r.usage().completionTokens() > 0 && r.tokens().length > 0);
        PrepackException e = assertThrows(PrepackException.class,
                () -> engine.generate(new Request("").addBos(false).maxTokens(4)));
        assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
    }

    @Test
    void anEmptyTokenPromptIsInvalidAndANullPromptThrows() {
        // As prepack_generate ("prompt_tokens is empty") and prepackd
        // (token_ids.ids must not be empty) answer: never BOS alone.
        PrepackException e = assertThrows(PrepackException.class, () -> new Request(new int[0]));
        assertEquals(StatusCode.INVALID_ARGUMENT, e.getStatus());
        assertTrue(e.getMessage().contains("prompt_tokens is empty"), e.getMessage());
        assertThrows(PrepackException.class, () -> engine.generate(new Request(new int[0]).maxTokens(1)));
        // Null is a programming error, not an empty prompt.
        assertThrows(NullPointerException.class, () -> new Request((String) null));
        assertThrows(NullPointerException.class, () -> new Request((int[]) null));
        assertThrows(NullPointerException.class, () -> new Request("Once").stop(null));
        // One id is enough, and the array is copied.
        int[] bos = {1};
        Request r = new Request(bos).maxTokens(2).ignoreEos(true).temperature(0f);
        bos[0] = 1 << 30;
        assertEquals(1, engine.generate(r).usage().promptTokens());
    }

    @Test
    void bf16WeightsGenerate() {
        // The enum admits no invalid dtype, so only the valid one can be passed here.
        try (Engine e = Engine.open(new EngineOptions("synthetic:tiny").threads(1).dtype(DType.BF16))) {
            Result r = e.generate(new Request("Once upon a time").maxTokens(4).temperature(0f).ignoreEos(true));
            assertEquals(4, r.tokens().length);
            assertEquals(FinishReason.LENGTH, r.finishReason());
        }
    }

    @Test
    void closingTwiceIsHarmlessAndAClosedEngineIsAnError() {
        Engine e = Engine.open(options());
        Stream s = e.start(greedy(cases.get(0)));
        s.close();
        s.close();
        PrepackException se = assertThrows(PrepackException.class, s::hasNext);
        assertEquals(StatusCode.FAILED_PRECONDITION, se.getStatus());
        s.cancel();   // harmless once closed

        e.close();
        e.close();
        PrepackException ee = assertThrows(PrepackException.class, () -> e.generate(greedy(cases.get(0))));
        assertEquals(StatusCode.FAILED_PRECONDITION, ee.getStatus());
        assertTrue(ee.getMessage().contains("closed"), ee.getMessage());
        assertThrows(PrepackException.class, () -> e.generateBatch(List.of(greedy(cases.get(0)))));
        PrepackException te = assertThrows(PrepackException.class, () -> e.tokenize("Once", true, false));
        assertEquals(StatusCode.FAILED_PRECONDITION, te.getStatus());
        assertTrue(te.getMessage().contains("closed"), te.getMessage());
        PrepackException de = assertThrows(PrepackException.class, () -> e.detokenize(new int[] {1}));
        assertEquals(StatusCode.FAILED_PRECONDITION, de.getStatus());
    }

    @Test
    void closingTheEngineEndsItsStreams() {
        Engine e = Engine.open(options());
        Stream s = e.start(new Request(cases.get(0).prompt()).maxTokens(500).ignoreEos(true));
        e.close();
        PrepackException ex = assertThrows(PrepackException.class, () -> s.forEachRemaining(t -> {}));
        assertEquals(StatusCode.CANCELLED, ex.getStatus());
        s.close();
    }

    static long rssKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    static void cycles(int n) {
        for (int i = 0; i < n; i++) {
            try (Engine e = Engine.open(options())) {
                assertEquals(8, e.generate(new Request("Once upon a time").maxTokens(8).temperature(0f)).tokens().length);
            }
        }
    }

    @Test
    void createGenerateCloseCyclesDoNotGrowMemory() throws IOException {
        Assumptions.assumeTrue(Files.exists(Path.of("/proc/self/status")), "needs /proc");
        cycles(20);   // warm-up: JIT, allocator pools, library initialisation
        System.gc();
        long before = rssKiB();
        cycles(200);
        System.gc();
        long after = rssKiB();
        System.out.printf("memory: VmRSS %d KiB before, %d KiB after 200 cycles (%+d KiB)%n", before, after,
                after - before);
        // A leaked engine (model + KV budget) is megabytes, so 200 of them
        // would be far past this; JVM heap and JIT noise stays well under it.
        assertTrue(after - before < 24 * 1024, "VmRSS grew by " + (after - before) + " KiB");
    }
}
