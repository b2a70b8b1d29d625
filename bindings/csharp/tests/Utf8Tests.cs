using System.Collections.Generic;
using System.Linq;
using System.Text;
using NUnit.Framework;

namespace Prepack.Tests
{
    /// <summary>
    /// Strings cross P/Invoke as UTF-8 both ways, characters outside the BMP
    /// (surrogate pairs in a C# string) included.
    /// </summary>
    [TestFixture]
    public class Utf8Tests
    {
        // Outside the BMP (emoji, a skin-tone modifier, a musical symbol) and CJK:
        // stories260K has no piece for any of them, so each byte is a byte-fallback token.
        private const string Wide = "\U0001F642\u4E16\u754C\U0001F44B\U0001F3FD\U0001D11E";   // 🙂世界👋🏽𝄞
        private static readonly string[] Texts =
        {
            Wide, "Once upon a time, \U0001F642 said \u4E16\u754C \U0001F44B\U0001F3FD!", "\u00E9\u20AC \U0001F600\U0001F600", "\U0001F642",
            "\U0001F999 caf\u00E9 \U0001D11E",   // 🦙 café 𝄞
        };

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

        // stories260K's ids of byte-fallback text: the dummy-prefix space (410), then byte b as id b + 3.
        private static int[] ByteIds(string s)
        {
            return new[] { 410 }.Concat(Encoding.UTF8.GetBytes(s).Select(b => b + 3)).ToArray();
        }

        [Test]
        public void TokenizeSeesTheUtf8Bytes()
        {
            int[] ids = engine.Tokenize(Wide, false, false);
            Assert.AreEqual(ByteIds(Wide), ids);
            Assert.AreEqual(Wide, engine.Detokenize(ids.Skip(1).ToArray()));   // the bytes alone
        }

        [Test]
        public void ALoneIdOfPartialUtf8DecodesWithoutError()
        {
            // 🦙 is F0 9F A6 99: byte-fallback ids 243 162 169 156. One id alone is
            // a partial character: it decodes to U+FFFD, never an error or a crash.
            int[] llama = ByteIds("\U0001F999").Skip(1).ToArray();
            Assert.AreEqual(new[] { 0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3 }, llama);
            foreach (int id in llama)
            {
                Assert.AreEqual("\uFFFD", engine.Detokenize(new[] { id }), "id " + id);
            }
            Assert.AreEqual("\U0001F999", engine.Detokenize(llama));   // whole again
            // Every byte comes out, a NUL (byte-fallback id 3) included.
            Assert.AreEqual("a\0b", engine.Detokenize(new[] { 'a' + 3, 0 + 3, 'b' + 3 }));
        }

        [Test]
        public void TextRoundTripsThroughTokenizeAndDetokenize()
        {
            foreach (string s in Texts)
            {
                Assert.AreEqual(s, engine.Detokenize(engine.Tokenize(s, true, false)), s);
                Assert.AreEqual(" " + s, engine.Detokenize(engine.Tokenize(s, false, false)), s);   // no BOS: every byte
            }
        }

        [Test]
        public void PromptsStopStringsAndMessagesCarryTheText()
        {
            foreach (string s in Texts)
            {
                var req = new Request(s) { MaxTokens = 2, IgnoreEos = true, Temperature = 0f };
                req.Stop.Add("\U0001F642 " + s);
                Result r = engine.GenerateResult(req);
                Assert.AreEqual(engine.Tokenize(s, true, false).Length, r.Usage.PromptTokens, s);
                Assert.AreEqual(2, r.Tokens.Length);
                Assert.AreEqual(engine.Detokenize(r.Tokens), r.Text);   // streamed pieces, decoded by C#
                var streamed = new StringBuilder();
                foreach (Token t in engine.Generate(req)) streamed.Append(t.Text);
                Assert.AreEqual(r.Text, streamed.ToString());
            }
            // The library's message quotes the schedule it rejects.
            var e = Assert.Throws<PrepackException>(() =>
                engine.GenerateResult(new Request("Once") { Lazy = true, LazySchedule = Wide }));
            Assert.AreEqual(StatusCode.InvalidArgument, e.Status);
            StringAssert.Contains("'" + Wide + "'", e.Message);
        }

        [Test]
        public void NativeFieldsRoundTrip()
        {
            using (var t = new Native.Token())
            {
                t.Text = Wide;
                Assert.AreEqual(Wide, t.Text);
            }
            using (var v = new Native.StringVector(new List<string> { Wide, "" }))
            {
                Assert.AreEqual(new[] { Wide, "" }, v.ToArray());
            }
        }
    }
}
