package dev.prepack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.List;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The stream contract of bindings/README.md: the end of a request is answered
 * again and again until the stream is closed; after close every read is
 * FAILED_PRECONDITION, however the request had ended.
 */
class StreamTest {
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

    static void assertFailedPrecondition(Executable call) {
        PrepackException e = assertThrows(PrepackException.class, call);
        assertEquals(StatusCode.FAILED_PRECONDITION, e.getStatus());
        assertEquals("FAILED_PRECONDITION: stream is closed", e.getMessage());
    }

    @Test
    void anEndedStreamAnswersItsEndUntilClosed() {
        EngineTest.Case c = cases.get(0);
        Stream s = engine.start(EngineTest.greedy(c));
        s.forEachRemaining(t -> {});
        Result r = s.result();
        assertArrayEquals(c.greedyIds(), r.tokens());
        // Iterator's end, every time: hasNext() false, next() NoSuchElementException.
        for (int i = 0; i < 2; i++) {
            assertFalse(s.hasNext());
            assertThrows(NoSuchElementException.class, s::next);
        }

        s.close();
        assertFailedPrecondition(s::hasNext);
        assertFailedPrecondition(s::next);
        assertFailedPrecondition(() -> s.forEachRemaining(t -> {}));
        s.cancel();   // cancel and close stay harmless
        s.close();
        assertFailedPrecondition(s::next);
        assertSame(r, s.result());   // what was read stays readable
    }

    @Test
    void aCancelledStreamRaisesCancelledUntilClosed() {
        Stream s = engine.start(new Request(cases.get(0).prompt()).maxTokens(500).ignoreEos(true));
        s.cancel();
        for (int i = 0; i < 2; i++) {
            PrepackException e = assertThrows(PrepackException.class, () -> s.forEachRemaining(t -> {}));
            assertEquals(StatusCode.CANCELLED, e.getStatus());
            assertEquals(StatusCode.CANCELLED, assertThrows(PrepackException.class, s::next).getStatus());
        }
        s.close();
        assertFailedPrecondition(s::hasNext);
        assertFailedPrecondition(s::next);
        assertEquals(FinishReason.CANCELLED, s.result().finishReason());
    }

    @Test
    void aStreamClosedBeforeReadingIsFailedPrecondition() {
        Stream s = engine.start(EngineTest.greedy(cases.get(0)));
        s.close();
        assertFailedPrecondition(s::next);
        assertNull(s.result());
    }

    @Test
    void theNativeLayerAnswersFailedPreconditionAfterEndAndClose() {
        // prepack_binding's own Stream, as every language sees it underneath.
        dev.prepack.swig.EngineOptions o = EngineTest.options().toNative();
        dev.prepack.swig.Request q = EngineTest.greedy(cases.get(0)).toNative();
        dev.prepack.swig.Engine e = dev.prepack.swig.Engine.open(o);
        dev.prepack.swig.Stream s = e.start(q);
        try {
            while (s.next(-1) != dev.prepack.swig.NextResult.NEXT_END) {
            }
            assertEquals(dev.prepack.swig.NextResult.NEXT_END, s.next(-1));   // the end, again
            assertEquals(dev.prepack.swig.NextResult.NEXT_END, s.next(0));
            s.close();
            assertFailedPrecondition(() -> s.next(-1));
            assertFailedPrecondition(() -> s.next(0));
            s.close();
        } finally {
            s.delete();
            e.delete();
            q.delete();
            o.delete();
        }
    }
}
