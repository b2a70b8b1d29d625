using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Text.RegularExpressions;
using NUnit.Framework;

namespace Prepack.Tests
{
    /// <summary>
    /// Tool calls and JSON mode on the real chat model SmolLM2-135M-Instruct
    /// (PREPACK_CHAT_MODEL); the fixture is ignored when it is absent. Arguments
    /// are judged by MiniJson.
    /// </summary>
    [TestFixture]
    public class ToolCallTests
    {
        private const string Tools =
            "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"The weather in a city\"," +
            " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}," +
            " {\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"description\": \"The time in a city\"," +
            " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]";

        private Engine engine;

        [TestFixtureSetUp]
        public void SetUp()
        {
            string model = Environment.GetEnvironmentVariable("PREPACK_CHAT_MODEL");
            if (model == null || !File.Exists(model))
            {
                Console.WriteLine("chat model not found ({0}; scripts/get_models.sh fetches it): tool call tests skipped", model);
                Assert.Ignore("chat model not found");
            }
            engine = Engine.Open(new EngineOptions(model) { Threads = 1, KvBudgetBytes = 64L << 20 });
        }

        [TestFixtureTearDown]
        public void TearDown()
        {
            if (engine != null) engine.Dispose();
        }

        private static Request Weather()
        {
            var c = new Conversation(Message.User("What is the weather in Paris?")) { ToolsJson = Tools };
            return new Request(c) { MaxTokens = 96, Temperature = 0f };
        }

        /// <summary>A whole call of name whose arguments are a JSON object with a string "city".</summary>
        private static void CheckCall(ToolCall c, string name)
        {
            Assert.AreEqual(name, c.Name, c.ToString());
            Assert.IsTrue(Regex.IsMatch(c.Id, "^call_[A-Za-z0-9]{24}$"), c.ToString());
            var args = MiniJson.Parse(c.Arguments) as Dictionary<string, object>;
            Assert.IsTrue(args != null && args.ContainsKey("city") && args["city"] is string, c.ToString());
        }

        [Test]
        public void RequiredMakesACallWhoseDeltasAddUp()
        {
            Request q = Weather();
            q.ToolChoice = ToolChoice.Required;
            var deltas = new List<ToolCallDelta>();
            var text = new StringBuilder();
            Result r;
            using (Stream s = engine.Start(q))
            {
                foreach (Token t in s)
                {
                    text.Append(t.Text);
                    deltas.AddRange(t.ToolCallDeltas);
                }
                r = s.Result;
            }
            Assert.IsTrue(StructuredOutputTests.Ended(r), r.FinishReason.ToString());
            Assert.IsTrue(r.ToolCalls.Count > 0);
            foreach (ToolCall c in r.ToolCalls) CheckCall(c, "get_weather");
            // The calls are never text; the deltas add up to the calls, their
            // first piece carrying the id and the name.
            Assert.AreEqual("", r.Text.Trim());
            Assert.AreEqual(r.Text, text.ToString());
            int n = r.ToolCalls.Count;
            var ids = Enumerable.Repeat("", n).ToArray();
            var names = Enumerable.Repeat("", n).ToArray();
            var args = Enumerable.Range(0, n).Select(_ => new StringBuilder()).ToArray();
            foreach (ToolCallDelta d in deltas)
            {
                Assert.IsTrue(d.Index >= 0 && d.Index < n, d.ToString());
                if (d.Id != "")
                {
                    Assert.AreEqual("", ids[d.Index], "a second first piece: " + d);
                    ids[d.Index] = d.Id;
                    names[d.Index] = d.Name;
                }
                args[d.Index].Append(d.Arguments);
            }
            for (int i = 0; i < n; i++)
            {
                Assert.AreEqual(r.ToolCalls[i].Id, ids[i]);
                Assert.AreEqual(r.ToolCalls[i].Name, names[i]);
                Assert.AreEqual(r.ToolCalls[i].Arguments, args[i].ToString());
            }
        }

        [Test]
        public void ANamedFunctionIsCalledAloneAlsoInABatch()
        {
            Request only = Weather();
            only.ToolChoiceFunction = "get_time";
            only.ParallelToolCalls = false;
            Result r = engine.GenerateResult(only);
            Assert.AreEqual(1, r.ToolCalls.Count);
            CheckCall(r.ToolCalls[0], "get_time");
            Request required = Weather();
            required.ToolChoice = ToolChoice.Required;
            IList<Result> rs = engine.GenerateBatch(new[] { required, only, new Request("Hi") { MaxTokens = 2 } });
            Assert.IsTrue(rs[0].ToolCalls.Count > 0);
            CheckCall(rs[0].ToolCalls[0], "get_weather");
            Assert.AreEqual(1, rs[1].ToolCalls.Count);
            CheckCall(rs[1].ToolCalls[0], "get_time");
            Assert.AreEqual(0, rs[2].ToolCalls.Count);
            // A grammar cannot shape an answer the tool-call format shapes.
            Request both = Weather();
            both.ToolChoice = ToolChoice.Required;
            both.GrammarKind = GrammarKind.JsonObject;
            var e = Assert.Throws<PrepackException>(() => engine.Start(both).Dispose());
            StringAssert.Contains("grammar_kind conflicts with tool_choice REQUIRED", e.Message);
        }

        [Test]
        public void JsonObjectChatParses()
        {
            var c = new Conversation(Message.User("Reply with a JSON object with one key \"answer\".\nWhat is 2+2?"));
            Result r = engine.GenerateResult(new Request(c) { MaxTokens = 64, Temperature = 0f, GrammarKind = GrammarKind.JsonObject });
            Assert.IsTrue(StructuredOutputTests.Ended(r), r.Text);
            Assert.IsTrue(MiniJson.Parse(r.Text) is Dictionary<string, object>, r.Text);
        }
    }
}
