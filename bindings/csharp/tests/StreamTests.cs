using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;

namespace Prepack.Tests
{
    /// <summary>
    /// The stream contract of bindings/README.md: the end of a request is
    /// answered again and again until the stream is disposed; after Dispose
    /// every read is FailedPrecondition, however the request had ended.
    /// </summary>
    [TestFixture]
    public class StreamTests
    {
        private Engine engine;
        private List<EngineTests.Case> cases;

        [TestFixtureSetUp]
        public void SetUp()
        {
            cases = EngineTests.CasesOrIgnore();
            engine = Engine.Open(EngineTests.Options());
        }

        [TestFixtureTearDown]
        public void TearDown()
        {
            if (engine != null) engine.Dispose();
        }

        private static void AssertFailedPrecondition(TestDelegate call)
        {
            var e = Assert.Throws<PrepackException>(call);
            Assert.AreEqual(StatusCode.FailedPrecondition, e.Status);
            StringAssert.Contains("stream is closed", e.Message);
        }

        [Test]
        public void AnEndedStreamAnswersItsEndUntilDisposed()
        {
            EngineTests.Case c = cases[0];
            Stream s = engine.Start(EngineTests.Greedy(c));
            Assert.AreEqual(c.GreedyIds, s.Select(t => t.Id).ToArray());
            Result r = s.Result;
            for (int i = 0; i < 2; i++)
            {
                Assert.IsNull(s.Read());              // the end, every time
                Assert.AreEqual(0, s.Count());        // and an enumeration that yields nothing
            }

            s.Dispose();
            AssertFailedPrecondition(() => s.Read());
            AssertFailedPrecondition(() => s.ToList());
            s.Cancel();   // Cancel and Dispose stay harmless
            s.Dispose();
            AssertFailedPrecondition(() => s.Read());
            Assert.AreSame(r, s.Result);   // what was read stays readable
        }

        [Test]
        public void ACancelledStreamThrowsCancelledUntilDisposed()
        {
            var req = new Request(cases[0].Prompt) { MaxTokens = 500, IgnoreEos = true };
            Stream s = engine.Start(req);
            s.Cancel();
            for (int i = 0; i < 2; i++)
            {
                Assert.AreEqual(StatusCode.Cancelled, Assert.Throws<PrepackException>(() => s.ToList()).Status);
                Assert.AreEqual(StatusCode.Cancelled, Assert.Throws<PrepackException>(() => s.Read()).Status);
            }
            s.Dispose();
            AssertFailedPrecondition(() => s.Read());
            Assert.AreEqual(FinishReason.Cancelled, s.Result.FinishReason);
        }

        [Test]
        public void AStreamDisposedBeforeReadingIsFailedPrecondition()
        {
            Stream s = engine.Start(EngineTests.Greedy(cases[0]));
            s.Dispose();
            AssertFailedPrecondition(() => s.Read());
            Assert.IsNull(s.Result);
        }

        [Test]
        public void GenerateDisposesItsStreamAtTheEnd()
        {
            IEnumerable<Token> tokens = engine.Generate(EngineTests.Greedy(cases[0]));
            Assert.AreEqual(cases[0].GreedyIds, tokens.Select(t => t.Id).ToArray());
            AssertFailedPrecondition(() => tokens.ToList());
        }
    }
}
