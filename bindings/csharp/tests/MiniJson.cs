using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Prepack.Tests
{
    /// <summary>
    /// A strict JSON (RFC 8259) reader for the tests, so that generated JSON is
    /// judged by code that has nothing to do with prepack's grammars: objects
    /// become dictionaries, arrays lists, numbers doubles. (Mono's JSON readers
    /// live in assemblies the tests do not reference.)
    /// </summary>
    internal sealed class MiniJson
    {
        /// <summary>Text that is not JSON; Truncated when more text could still make it JSON.</summary>
        internal sealed class JsonError : Exception
        {
            internal JsonError(string message, bool truncated) : base(message)
            {
                Truncated = truncated;
            }

            internal bool Truncated { get; private set; }
        }

        private const int MaxDepth = 256;
        private readonly string s;
        private int at;

        private MiniJson(string s)
        {
            this.s = s;
        }

        /// <summary>The one JSON value of text (whitespace around it allowed).</summary>
        internal static object Parse(string text)
        {
            var p = new MiniJson(text);
            object v = p.Value(0);
            p.Space();
            if (p.at != text.Length) throw new JsonError("text after the value at " + p.at, false);
            return v;
        }

        private char Peek()
        {
            if (at >= s.Length) throw new JsonError("the text ends at " + at, true);
            return s[at];
        }

        private void Expect(char c)
        {
            if (Peek() != c) throw new JsonError("expected '" + c + "' at " + at, false);
            at++;
        }

        private void Space()
        {
            while (at < s.Length && " \t\n\r".IndexOf(s[at]) >= 0) at++;
        }

        private object Value(int depth)
        {
            if (depth > MaxDepth) throw new JsonError("nested too deep", false);
            Space();
            char c = Peek();
            switch (c)
            {
                case '{': return ReadObject(depth);
                case '[': return ReadArray(depth);
                case '"': return ReadString();
                case 't': return Literal("true", true);
                case 'f': return Literal("false", false);
                case 'n': return Literal("null", null);
            }
            if (c == '-' || (c >= '0' && c <= '9')) return Number();
            throw new JsonError("unexpected '" + c + "' at " + at, false);
        }

        private Dictionary<string, object> ReadObject(int depth)
        {
            Expect('{');
            var result = new Dictionary<string, object>();
            Space();
            if (Peek() == '}')
            {
                at++;
                return result;
            }
            while (true)
            {
                Space();
                string key = ReadString();
                if (result.ContainsKey(key)) throw new JsonError("duplicate key " + key, false);
                Space();
                Expect(':');
                result[key] = Value(depth + 1);
                Space();
                if (Peek() == '}')
                {
                    at++;
                    return result;
                }
                Expect(',');
            }
        }

        private List<object> ReadArray(int depth)
        {
            Expect('[');
            var result = new List<object>();
            Space();
            if (Peek() == ']')
            {
                at++;
                return result;
            }
            while (true)
            {
                result.Add(Value(depth + 1));
                Space();
                if (Peek() == ']')
                {
                    at++;
                    return result;
                }
                Expect(',');
            }
        }

        private string ReadString()
        {
            Expect('"');
            var result = new StringBuilder();
            while (true)
            {
                char c = Peek();
                at++;
                if (c == '"') return result.ToString();
                if (c < 0x20) throw new JsonError("control character in a string at " + (at - 1), false);
                if (c != '\\')
                {
                    result.Append(c);
                    continue;
                }
                char e = Peek();
                at++;
                switch (e)
                {
                    case '"': case '\\': case '/': result.Append(e); break;
                    case 'b': result.Append('\b'); break;
                    case 'f': result.Append('\f'); break;
                    case 'n': result.Append('\n'); break;
                    case 'r': result.Append('\r'); break;
                    case 't': result.Append('\t'); break;
                    case 'u':
                        int code = 0;
                        for (int i = 0; i < 4; i++)
                        {
                            int d = Uri.IsHexDigit(Peek()) ? Convert.ToInt32(Peek().ToString(), 16) : -1;
                            if (d < 0) throw new JsonError("bad \\u escape at " + at, false);
                            code = code * 16 + d;
                            at++;
                        }
                        result.Append((char)code);
                        break;
                    default: throw new JsonError("bad escape at " + (at - 1), false);
                }
            }
        }

        private double Number()
        {
            int start = at;
            if (Peek() == '-') at++;
            if (Peek() == '0') at++;
            else Digits();
            if (at < s.Length && s[at] == '.')
            {
                at++;
                Digits();
            }
            if (at < s.Length && (s[at] == 'e' || s[at] == 'E'))
            {
                at++;
                if (Peek() == '+' || Peek() == '-') at++;
                Digits();
            }
            return double.Parse(s.Substring(start, at - start), CultureInfo.InvariantCulture);
        }

        private void Digits()
        {
            char c = Peek();
            if (c < '0' || c > '9') throw new JsonError("expected a digit at " + at, false);
            while (at < s.Length && s[at] >= '0' && s[at] <= '9') at++;
        }

        private object Literal(string word, object value)
        {
            foreach (char c in word) Expect(c);
            return value;
        }
    }
}
