package dev.prepack;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON (RFC 8259) reader for the tests, so that generated JSON is
 * judged by code that has nothing to do with prepack's grammars: objects
 * become Maps, arrays Lists, numbers Doubles. Java's standard library has no
 * JSON parser.
 */
final class MiniJson {
    /** Text that is not JSON; {@code truncated} when more text could still make it JSON. */
    static final class JsonError extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final boolean truncated;

        JsonError(String message, boolean truncated) {
            super(message);
            this.truncated = truncated;
        }
    }

    private final String s;
    private int at;

    private MiniJson(String s) {
        this.s = s;
    }

    /** The one JSON value of {@code text} (whitespace around it allowed). */
    static Object parse(String text) {
        MiniJson p = new MiniJson(text);
        Object v = p.value(0);
        p.space();
        if (p.at != text.length()) throw new JsonError("text after the value at " + p.at, false);
        return v;
    }

    private static final int MAX_DEPTH = 256;

    private char peek() {
        if (at >= s.length()) throw new JsonError("the text ends at " + at, true);
        return s.charAt(at);
    }

    private void expect(char c) {
        if (peek() != c) throw new JsonError("expected '" + c + "' at " + at, false);
        at++;
    }

    private void space() {
        while (at < s.length() && " \t\n\r".indexOf(s.charAt(at)) >= 0) at++;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) throw new JsonError("nested too deep", false);
        space();
        char c = peek();
        switch (c) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                throw new JsonError("unexpected '" + c + "' at " + at, false);
        }
    }

    private Map<String, Object> object(int depth) {
        expect('{');
        Map<String, Object> out = new LinkedHashMap<>();
        space();
        if (peek() == '}') {
            at++;
            return out;
        }
        while (true) {
            space();
            String key = string();
            if (out.containsKey(key)) throw new JsonError("duplicate key " + key, false);
            space();
            expect(':');
            out.put(key, value(depth + 1));
            space();
            if (peek() == '}') {
                at++;
                return out;
            }
            expect(',');
        }
    }

    private List<Object> array(int depth) {
        expect('[');
        List<Object> out = new ArrayList<>();
        space();
        if (peek() == ']') {
            at++;
            return out;
        }
        while (true) {
            out.add(value(depth + 1));
            space();
            if (peek() == ']') {
                at++;
                return out;
            }
            expect(',');
        }
    }

    private String string() {
        expect('"');
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = peek();
            at++;
            if (c == '"') return out.toString();
            if (c < 0x20) throw new JsonError("control character in a string at " + (at - 1), false);
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char e = peek();
            at++;
            switch (e) {
                case '"': case '\\': case '/': out.append(e); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u': {
                    int code = 0;
                    for (int i = 0; i < 4; i++) {
                        int d = Character.digit(peek(), 16);
                        if (d < 0) throw new JsonError("bad \\u escape at " + at, false);
                        code = code * 16 + d;
                        at++;
                    }
                    out.append((char) code);
                    break;
                }
                default: throw new JsonError("bad escape at " + (at - 1), false);
            }
        }
    }

    private Double number() {
        int start = at;
        if (peek() == '-') at++;
        if (peek() == '0') {
            at++;
        } else {
            digits();
        }
        if (at < s.length() && s.charAt(at) == '.') {
            at++;
            digits();
        }
        if (at < s.length() && (s.charAt(at) == 'e' || s.charAt(at) == 'E')) {
            at++;
            if (peek() == '+' || peek() == '-') at++;
            digits();
        }
        return Double.valueOf(s.substring(start, at));
    }

    private void digits() {
        char c = peek();
        if (c < '0' || c > '9') throw new JsonError("expected a digit at " + at, false);
        while (at < s.length() && s.charAt(at) >= '0' && s.charAt(at) <= '9') at++;
    }

    private Object literal(String word, Object value) {
        for (int i = 0; i < word.length(); i++) expect(word.charAt(i));
        return value;
    }
}
