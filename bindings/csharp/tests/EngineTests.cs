using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;
using NUnit.Framework;

namespace Prepack.Tests
{
    /// <summary>
    /// The C# binding against the real stories260K model: greedy output equals
    /// llama2.c's reference ids, and streaming, batching, cancellation, errors
    /// and disposing behave. PREPACK_MODEL and PREPACK_REFERENCE name the files.
    /// </summary>
    [TestFixture]
    public class EngineTests
    {
        internal sealed class Case
        {
            public string Prompt;
            public int[] PromptIds;   // llama2.c's encoding, BOS (id 1) first
            public int[] GreedyIds;
        }

        private Engine engine;
        private List<Case> cases;

        internal static EngineOptions Options()
        {
            // One thread and a small KV budget: the test machine is small and shared.
            return new EngineOptions(Environment.GetEnvironmentVariable("PREPACK_MODEL"))
            {
                Threads = 1,
                KvBudgetBytes = 8L << 20,
            };
        }

        /// <summary>reference.json's cases; ignores the calling fixture when the model is absent.</summary>
        internal static List<Case> CasesOrIgnore()
        {
            string model = Environment.GetEnvironmentVariable("PREPACK_MODEL");
            string reference = Environment.GetEnvironmentVariable("PREPACK_REFERENCE");
            if (model == null || reference == null || !File.Exists(model) || !File.Exists(reference))
            {
                Console.WriteLine("SKIP: stories260K model not found ({0})", model);
                Assert.Ignore("stories260K model not found");
            }
            return ReadCases(File.ReadAllText(reference));
        }

        [TestFixtureSetUp]
        public void SetUp()
        {
            cases = CasesOrIgnore();
            engine = Engine.Open(Options());
        }

        [TestFixtureTearDown]
        public void TearDown()
        {
            if (engine != null) engine.Dispose();
        }

        // reference.json's cases: each "prompt" string, then its "prompt_ids" and "greedy_ids" arrays.
        private static List<Case> ReadCases(string json)
        {
            var re = new Regex("\"prompt\"\\s*:\\s*\"([^\"]*)\".*?\"prompt_ids\"\\s*:\\s*\\[([^\\]]*)\\]" +
                               ".*?\"greedy_ids\"\\s*:\\s*\\[([^\\]]*)\\]", RegexOptions.Singleline);
            var result = new List<Case>();
            foreach (Match m in re.Matches(json))
            {
                result.Add(new Case { Prompt = m.Groups[1].Value, PromptIds = ParseIds(m.Groups[2].Value), GreedyIds = ParseIds(m.Groups[3].Value) });
            }
            Assert.That(result.Count, Is.GreaterThanOrEqualTo(2), "reference.json has its cases");
            return result;
        }

        private static int[] ParseIds(string list)
        {
            return list.Split(',').Select(s => int.Parse(s.Trim())).ToArray();
        }

        internal static Request Greedy(Case c)
        {
            return new Request(c.Prompt) { MaxTokens = c.GreedyIds.Length, Temperature = 0f };
        }

        // The longest run the context allows, so it is still going when cancelled.
        private Request Long()
        {
            return new Request(cases[0].Prompt) { MaxTokens = 500, IgnoreEos = true, Temperature = 0f };
        }

        [Test]
        public void GreedyGenerationEqualsReference()
        {
            foreach (Case c in cases)
            {
                Result r = engine.GenerateResult(Greedy(c));
                Assert.AreEqual(c.GreedyIds, r.Tokens, c.Prompt);
                Assert.AreEqual(FinishReason.Length, r.FinishReason);
                Assert.AreEqual(StatusCode.Ok, r.Status);
                Assert.AreEqual(c.GreedyIds.Length, r.Usage.CompletionTokens);
            }
        }

        [Test]
        public void LazyOptionsReachTheEngine()
        {
            // Keep ratio 1.0 scores every token but keeps them all: the reference ids.
            Case c = cases[0];
            Request kept = Greedy(c);
            kept.Lazy = true;
            kept.LazyKeepRatio = 1.0f;
            Result r = engine.GenerateResult(kept);
            Assert.AreEqual(c.GreedyIds, r.Tokens);
            Assert.AreEqual(0.0, r.Usage.PrunedFraction);
            kept.LazySchedule = "3:0.5,1:0.2";
            var e = Assert.Throws<PrepackException>(() => engine.GenerateResult(kept));
            Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
            StringAssert.Contains("1:0.2", e.Message);
        }

        [Test]
        public void StreamingYieldsTheFullResult()
        {
            Case c = cases[0];
            Result full = engine.GenerateResult(Greedy(c));
            var ids = new List<int>();
            var text = new StringBuilder();
            foreach (Token t in engine.Generate(Greedy(c)))
            {
                ids.Add(t.Id);
                text.Append(t.Text);
            }
            Assert.AreEqual(full.Tokens, ids.ToArray());
            Assert.AreEqual(full.Text, text.ToString());

            using (Stream s = engine.Start(Greedy(c)))
            {
                Assert.AreEqual(full.Tokens, s.Select(t => t.Id).ToArray());
                Assert.AreEqual(full.Tokens, s.Result.Tokens);
                Assert.AreEqual(FinishReason.Length, s.Result.FinishReason);
            }
        }

        [Test]
        public void LogprobsAndStopStrings()
        {
            Request req = Greedy(cases[0]);
            req.Logprobs = 3;
            foreach (Token t in engine.Generate(req))
            {
                // Greedy picks the most likely token, so it heads the alternatives.
                Assert.AreEqual(3, t.TopIds.Length);
                Assert.AreEqual(3, t.TopLogprobs.Length);
                Assert.AreEqual(t.Id, t.TopIds[0]);
            }
            req = Greedy(cases[0]);
            req.Stop.Add("Lily");   // in the reference continuation
            Result r = engine.GenerateResult(req);
            Assert.AreEqual(FinishReason.Stop, r.FinishReason);
            StringAssert.EndsWith("named ", r.Text);
            StringAssert.DoesNotContain("Lily", r.Text);
        }

        [Test]
        public void BatchEqualsSingleRuns()
        {
            var batch = cases.Select(Greedy).ToList();
            batch.Add(Greedy(cases[0]));   // a repeat shares its whole prompt
            IList<Result> results = engine.GenerateBatch(batch);
            Assert.AreEqual(batch.Count, results.Count);
            for (int i = 0; i < batch.Count; i++)
            {
                Case c = cases[i % cases.Count];
                Assert.AreEqual(engine.GenerateResult(Greedy(c)).Tokens, results[i].Tokens);
                Assert.AreEqual(c.GreedyIds, results[i].Tokens);
            }

            results = engine.GenerateBatch(new[] { Greedy(cases[0]), new Request("x") { MaxTokens = 0 } });
            Assert.AreEqual(StatusCode.Ok, results[0].Status);
            Assert.AreEqual(StatusCode.InvalidArgument, results[1].Status);
            StringAssert.Contains("max_tokens", results[1].Message);
        }

        [Test]
        public void CancelFromAnotherThreadEndsTheStream()
        {
            using (Stream s = engine.Start(Long()))
            {
                var first = new ManualResetEventSlim();
                var canceller = new Thread(() => { first.Wait(); s.Cancel(); });
                canceller.Start();
                int n = 0;
                var e = Assert.Throws<PrepackException>(() =>
                {
                    foreach (Token t in s)
                    {
                        if (++n == 1) first.Set();
                    }
                });
                canceller.Join();
                Assert.AreEqual(StatusCode.Cancelled, e.Status);
                Assert.AreEqual(FinishReason.Cancelled, s.Result.FinishReason);
                Assert.Less(n, 500);
            }
        }

        [Test]
        public void CancellationTokenEndsTheEnumeration()
        {
            using (var cts = new CancellationTokenSource())
            {
                int n = 0;
                var e = Assert.Throws<PrepackException>(() =>
                {
                    foreach (Token t in engine.Generate(Long(), cts.Token))
                    {
                        if (++n == 1) ThreadPool.QueueUserWorkItem(_ => cts.Cancel());
                    }
                });
                Assert.AreEqual(StatusCode.Cancelled, e.Status);
                Assert.Less(n, 500);
            }
        }

        [Test]
        public void InvalidArgumentsThrowWithTheMessage()
        {
            var e = Assert.Throws<PrepackException>(() => engine.GenerateResult(new Request("Once") { Temperature = -1f }));
            Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
            StringAssert.Contains("temperature", e.Message);

            e = Assert.Throws<PrepackException>(() => engine.Generate(new Request("Once") { MaxTokens = 0 }));
            Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
            StringAssert.Contains("max_tokens", e.Message);

            e = Assert.Throws<PrepackException>(() => Engine.Open(new EngineOptions("/no/such/model.gguf")));
            Assert.AreEqual(StatusCode.NotFound, e.Status);
        }

        [Test]
        public void TokenizeEqualsReferenceAndDetokenizeRoundTrips()
        {
            foreach (Case c in cases)
            {
                Assert.That(c.PromptIds.Length >= 2 && c.PromptIds[0] == 1, "prompt_ids start with BOS");
                Assert.AreEqual(c.PromptIds, engine.Tokenize(c.Prompt, true, false), c.Prompt);
                int[] bare = engine.Tokenize(c.Prompt, false, false);
                Assert.AreEqual(c.PromptIds.Skip(1).ToArray(), bare, c.Prompt);
                // Decoding is exact: without a BOS every byte is kept, SentencePiece's
                // dummy-prefix space too; after a BOS that space is dropped.
                Assert.AreEqual(" " + c.Prompt, engine.Detokenize(bare));
                Assert.AreEqual(c.Prompt, engine.Detokenize(c.PromptIds));
            }
            Assert.AreEqual("", engine.Detokenize(new int[0]));
            foreach (int[] bad in new[] { new[] { 1, 1 << 30 }, new[] { -1 }, new[] { 512 } })   // stories260K has 512 ids
            {
                var e = Assert.Throws<PrepackException>(() => engine.Detokenize(bad));
                Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
                StringAssert.Contains("vocabulary", e.Message);
            }
        }

        [Test]
        public void ParseSpecialMakesControlTextOneToken()
        {
            // stories260K's id 2 is the control token </s> (its README).
            Assert.AreEqual(new[] { 2 }, engine.Tokenize("</s>", false, true));
            int[] plain = engine.Tokenize("</s>", false, false);
            Assert.That(plain.Length >= 2 && !plain.Contains(2), string.Join(",", plain));
            // The request option reaches the engine: BOS + </s> is two prompt tokens.
            var req = new Request("</s>") { MaxTokens = 1, IgnoreEos = true, Temperature = 0f, ParseSpecial = true };
            Assert.AreEqual(2, engine.GenerateResult(req).Usage.PromptTokens);
            req.ParseSpecial = false;
            Assert.AreEqual(1 + plain.Length, engine.GenerateResult(req).Usage.PromptTokens);
        }

        [Test]
        public void AnEmptyTokenPromptIsInvalidAndANullPromptThrows()
        {
            // As prepack_generate ("prompt_tokens is empty") and prepackd
            // (token_ids.ids must not be empty) answer: never BOS alone.
            var e = Assert.Throws<PrepackException>(() => new Request(new int[0]));
            Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
            StringAssert.Contains("prompt_tokens is empty", e.Message);
            Assert.Throws<PrepackException>(() => new Request(new List<int>()));
            // Null is a programming error, not an empty prompt.
            Assert.Throws<ArgumentNullException>(() => new Request((string)null));
            Assert.Throws<ArgumentNullException>(() => new Request((int[])null));
            Assert.Throws<ArgumentNullException>(() => new Request((Conversation)null));
            // One id is enough, and the ids are copied.
            int[] bos = { 1 };
            var r = new Request(bos) { MaxTokens = 2, IgnoreEos = true, Temperature = 0f };
            bos[0] = 1 << 30;
            Assert.AreEqual(1, engine.GenerateResult(r).Usage.PromptTokens);
        }

        [Test]
        public void AnEmptyPromptWithBosGenerates()
        {
            Result r = engine.GenerateResult(new Request("") { MaxTokens = 4, IgnoreEos = true, Temperature = 0f });
            Assert.AreEqual(1, r.Usage.PromptTokens);   // BOS alone
            Assert.Greater(r.Usage.CompletionTokens, 0);
            Assert.Greater(r.Tokens.Length, 0);
            var e = Assert.Throws<PrepackException>(() => engine.GenerateResult(new Request("") { AddBos = false, MaxTokens = 4 }));
            Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
        }

        [Test]
        public void Bf16WeightsGenerateAndABadDTypeThrows()
        {
            using (Engine e = Engine.Open(new EngineOptions("synthetic:tiny") { Threads = 1, DType = DType.Bf16 }))
            {
                Result r = e.GenerateResult(new Request("Once upon a time") { MaxTokens = 4, Temperature = 0f, IgnoreEos = true });
                Assert.AreEqual(4, r.Tokens.Length);
                Assert.AreEqual(FinishReason.Length, r.FinishReason);
            }

            // A C# enum holds any int, so a value outside prepack_dtype reaches the library.
            var ex = Assert.Throws<PrepackException>(() => Engine.Open(new EngineOptions("synthetic:tiny") { Threads = 1, DType = (DType)9 }));
            Assert.AreEqual(StatusCode.InvalidArgument, ex.Status);
            StringAssert.Contains("dtype", ex.Message);
        }

        [Test]
        public void DisposingTwiceIsHarmlessAndADisposedEngineIsAnError()
        {
            Engine e = Engine.Open(Options());
            Stream s = e.Start(Greedy(cases[0]));
            s.Dispose();
            s.Dispose();
            var se = Assert.Throws<PrepackException>(() => s.Read());
            Assert.AreEqual(StatusCode.FailedPrecondition, se.Status);
            s.Cancel();   // harmless once disposed

            e.Dispose();
            e.Dispose();
            var ee = Assert.Throws<PrepackException>(() => e.GenerateResult(Greedy(cases[0])));
            Assert.AreEqual(StatusCode.FailedPrecondition, ee.Status);
            StringAssert.Contains("closed", ee.Message);
            Assert.Throws<PrepackException>(() => e.GenerateBatch(new[] { Greedy(cases[0]) }));
            var te = Assert.Throws<PrepackException>(() => e.Tokenize("Once", true, false));
            Assert.AreEqual(StatusCode.FailedPrecondition, te.Status);
            StringAssert.Contains("closed", te.Message);
            var de = Assert.Throws<PrepackException>(() => e.Detokenize(new[] { 1 }));
            Assert.AreEqual(StatusCode.FailedPrecondition, de.Status);
        }

        [Test]
        public void DisposingTheEngineEndsItsStreams()
        {
            Engine e = Engine.Open(Options());
            using (Stream s = e.Start(Long()))
            {
                e.Dispose();
                var ex = Assert.Throws<PrepackException>(() => s.ToList());
                Assert.AreEqual(StatusCode.Cancelled, ex.Status);
            }
        }

        private static long RssKiB()
        {
            foreach (string line in File.ReadAllLines("/proc/self/status"))
            {
                if (line.StartsWith("VmRSS:")) return long.Parse(Regex.Replace(line, "[^0-9]", ""));
            }
            return -1;
        }

        private static void Cycles(int n)
        {
            for (int i = 0; i < n; i++)
            {
                using (Engine e = Engine.Open(Options()))
                {
                    Assert.AreEqual(8, e.GenerateResult(new Request("Once upon a time") { MaxTokens = 8, Temperature = 0f }).Tokens.Length);
                }
            }
        }

        private static void Collect()
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
        }

        [Test]
        public void CreateGenerateDisposeCyclesDoNotGrowMemory()
        {
            if (!File.Exists("/proc/self/status")) Assert.Ignore("needs /proc");
            Cycles(20);   // warm-up: JIT, allocator pools, library initialisation
            Collect();
            long before = RssKiB();
            Cycles(200);
            Collect();
            long after = RssKiB();
            Console.WriteLine("memory: VmRSS {0} KiB before, {1} KiB after 200 cycles ({2:+#;-#;0} KiB)", before, after, after - before);
            // A leaked engine (model + KV cache) is over a megabyte of RSS, so 200
            // of them would be far past this bound; GC heap noise stays under it.
            Assert.Less(after - before, 24 * 1024, "VmRSS growth in KiB");
        }
    }
}
