using System;
using System.Collections.Generic;
using System.Text.RegularExpressions;
using NUnit.Framework;

namespace Prepack.Tests
{
    /// <summary>
    /// Structured output on stories260K: every generated text is judged by
    /// System.Text.RegularExpressions and MiniJson, never by prepack; bad
    /// grammars and tool choices are refused by name.
    /// </summary>
    [TestFixture]
    public class StructuredOutputTests
    {
        private Engine engine;

        [TestFixtureSetUp]
        public void SetUp()
        {
            EngineTests.CasesOrIgnore();
            engine = Engine.Open(EngineTests.Options());
        }

        [TestFixtureTearDown]
        public void TearDown()
        {
            if (engine != null) engine.Dispose();
        }

        /// <summary>Whether the request ended where its grammar let it, rather than cut short.</summary>
        internal static bool Ended(Result r)
        {
            return r.FinishReason == FinishReason.Stop || r.FinishReason == FinishReason.Eos;
        }

        /// <summary>Greedy, then sampled with a few seeds.</summary>
        private static IEnumerable<Request> Variants(Func<Request> make)
        {
            Request greedy = make();
            greedy.Temperature = 0f;
            yield return greedy;
            for (long seed = 1; seed <= 3; seed++)
            {
                Request sampled = make();
                sampled.Temperature = 1f;
                sampled.Seed = seed;
                yield return sampled;
            }
        }

        [Test]
        public void RegexConstrainsTheWholeText()
        {
            foreach (string re in new[] { "(yes|no)", "[a-z]{3,8}", "(red|green|blue) [0-9]{2}" })
            {
                var whole = new Regex("^(?:" + re + ")$");
                foreach (Request q in Variants(() => new Request("Once upon a time") { MaxTokens = 32, GrammarKind = GrammarKind.Regex, Grammar = re }))
                {
                    Result r = engine.GenerateResult(q);
                    Assert.IsTrue(whole.IsMatch(r.Text) && Ended(r), re + ": " + r.Text + " " + r.FinishReason);
                }
            }
            // Unconstrained, the model tells a story: the grammar made the texts match.
            Result free = engine.GenerateResult(new Request("Once upon a time") { MaxTokens = 32, Temperature = 0f });
            Assert.IsFalse(Regex.IsMatch(free.Text, "^(?:yes|no|[a-z]{3,8})$"), free.Text);
        }

        [Test]
        public void JsonSchemaTextParsesAndValidates()
        {
            const string schema = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 12}," +
                                  " \"age\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 99}}, \"required\": [\"name\", \"age\"]}";
            foreach (Request q in Variants(() => new Request("Once upon a time") { MaxTokens = 96, GrammarKind = GrammarKind.JsonSchema, Grammar = schema }))
            {
                Result r = engine.GenerateResult(q);
                Assert.IsTrue(Ended(r), r.Text + " " + r.FinishReason);
                var m = MiniJson.Parse(r.Text) as Dictionary<string, object>;
                Assert.IsNotNull(m, r.Text);
                // Strict objects: the two properties the schema names and no other.
                Assert.AreEqual(2, m.Count, r.Text);
                var name = m["name"] as string;
                Assert.IsTrue(name != null && new System.Globalization.StringInfo(name).LengthInTextElements <= 12, r.Text);
                Assert.IsTrue(m["age"] is double, r.Text);
                double age = (double)m["age"];
                Assert.IsTrue(age == Math.Floor(age) && age >= 0 && age <= 99, r.Text);
            }
        }

        [Test]
        public void JsonObjectTextIsJsonOrItsPrefix()
        {
            // stories260K never closes its object within its context: each text,
            // cut short, must still be the start of a JSON object.
            foreach (Request q in Variants(() => new Request("Once upon a time") { MaxTokens = 48, GrammarKind = GrammarKind.JsonObject }))
            {
                Result r = engine.GenerateResult(q);
                Assert.IsTrue(r.Text.TrimStart().StartsWith("{", StringComparison.Ordinal), r.Text);
                try
                {
                    Assert.IsTrue(MiniJson.Parse(r.Text) is Dictionary<string, object>, r.Text);
                    Assert.IsTrue(Ended(r), r.Text);
                }
                catch (MiniJson.JsonError e)
                {
                    Assert.IsTrue(e.Truncated && r.FinishReason == FinishReason.Length, r.Text + ": " + e.Message);
                }
            }
        }

        [Test]
        public void BadGrammarsAreRefusedByName()
        {
            var bad = new[]
            {
                Tuple.Create(GrammarKind.Regex, "(yes", "regex at offset 0"),
                Tuple.Create(GrammarKind.Gbnf, "root ::= foo", "undefined rule 'foo'"),
                Tuple.Create(GrammarKind.JsonSchema, "{\"type\": \"strin\"}", "\"strin\""),
                Tuple.Create(GrammarKind.JsonSchema, "{\"type\": ", "not valid JSON"),
                Tuple.Create(GrammarKind.JsonObject, "{}", "JSON_OBJECT"),
                Tuple.Create((GrammarKind)9, "x", "grammar_kind 9 is unknown"),
            };
            foreach (var b in bad)
            {
                var e = Assert.Throws<PrepackException>(() => Engine.CheckGrammar(b.Item1, b.Item2));
                Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
                StringAssert.Contains(b.Item3, e.Message);
                // A request refuses it the same way, before it starts.
                var run = Assert.Throws<PrepackException>(() => engine.Start(new Request("Once") { GrammarKind = b.Item1, Grammar = b.Item2 }).Dispose());
                Assert.AreEqual(e.Message, run.Message);
            }
            Engine.CheckGrammar(GrammarKind.None, null);
            Engine.CheckGrammar(GrammarKind.JsonObject, null);
            Engine.CheckGrammar(GrammarKind.Regex, "[a-z]+");
            Engine.CheckGrammar(GrammarKind.Gbnf, "root ::= \"a\" | \"b\"");
            Engine.CheckGrammar(GrammarKind.JsonSchema, "{\"type\": \"integer\"}");
        }

        [Test]
        public void ToolChoiceReachesTheLibraryAsMeant()
        {
            // stories260K has no chat template, so no tools: the library names the
            // choice it received, which checks C#'s values against C's.
            var cases = new[]
            {
                Tuple.Create(new Request("a") { ToolChoice = ToolChoice.Required }, "tool_choice is REQUIRED but the request has no tools"),
                Tuple.Create(new Request("a") { ToolChoiceFunction = "f" }, "tool_choice is FUNCTION but the request has no tools"),
                Tuple.Create(new Request("a") { ToolChoice = ToolChoice.None, ToolChoiceFunction = "f" }, "tool_choice is NONE, which takes no function"),
                Tuple.Create(new Request("a") { ToolChoice = ToolChoice.Function }, "tool_choice_function is NULL or empty"),
                Tuple.Create(new Request("a") { ToolChoice = (ToolChoice)7 }, "tool_choice 7 is unknown"),
            };
            foreach (var c in cases)
            {
                var e = Assert.Throws<PrepackException>(() => engine.GenerateResult(c.Item1));
                Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
                StringAssert.Contains(c.Item2, e.Message);
            }
            foreach (ToolChoice choice in new[] { ToolChoice.Auto, ToolChoice.None })
            {
                Result r = engine.GenerateResult(new Request("Once") { MaxTokens = 4, ToolChoice = choice, ParallelToolCalls = false });
                Assert.AreEqual(4, r.Usage.CompletionTokens);
                Assert.AreEqual(0, r.ToolCalls.Count);
            }
        }
    }
}
