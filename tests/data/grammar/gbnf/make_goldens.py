#!/usr/bin/env python3
"""Writes goldens.json: strings with the verdict of an oracle that knows
nothing of prepack's GBNF parser, one per grammar file of this folder:

  json.gbnf        Python's json.loads (NaN/Infinity refused, as RFC 8259 does)
  arithmetic.gbnf  Python's own expression parser (ast), keeping + - * / on ints
  list/chess/japanese/counted.gbnf   a Python `re` pattern written by hand
  nested.gbnf      a hand-written recursive recognizer

Candidates: random valid strings from a generator per grammar, mutations
of them (near misses), and random strings over the grammar's alphabet.
For counted.gbnf every string over {a,b,c} up to length 9 is judged and
only the accepted ones are listed. Run: python3 make_goldens.py
"""
import ast
import itertools
import json
import random
import re

rng = random.Random(47)


def mutate(s, alphabet):
    out = set()
    for _ in range(6):
        if not s:
            break
        i = rng.randrange(len(s))
        op = rng.randrange(4)
        if op == 0:
            out.add(s[:i] + s[i + 1:])
        elif op == 1:
            out.add(s[:i] + rng.choice(alphabet) + s[i:])
        elif op == 2:
            out.add(s[:i] + rng.choice(alphabet) + s[i + 1:])
        else:
            j = rng.randrange(i, len(s) + 1)
            out.add(s[:i] + s[i:j] + s[i:j] + s[j:])
    return out


def candidates(generate, alphabet, n_valid=60, n_random=60, max_len=40):
    pool = set()
    for _ in range(n_valid):
        s = generate()
        if len(s.encode()) <= max_len:
            pool.add(s)
            pool |= {m for m in mutate(s, alphabet) if len(m.encode()) <= max_len}
    for _ in range(n_random):
        pool.add("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))))
    return sorted(pool)


# ---- json ------------------------------------------------------------------
def gen_json(depth=0):
    kind = rng.randrange(7 if depth < 2 else 5)
    ws = lambda: rng.choice(["", "", " ", "\n", "\t "])
    if kind == 0:
        return rng.choice(["true", "false", "null"])
    if kind == 1:
        return rng.choice(["0", "-1", "12", "3.5", "-0.25e+3", "1E9", "10e-2"])
    if kind in (2, 3, 4):
        chars = ["a", "b", "é", "\\n", "\\\"", "\\u00e9", "\\/", " ", "猫"]
        return '"' + "".join(rng.choice(chars) for _ in range(rng.randrange(4))) + '"'
    if kind == 5:
        items = [gen_json(depth + 1) for _ in range(rng.randrange(3))]
        return "[" + ws() + ("," + ws()).join(items) + ws() + "]"
    members = ['"k%d"' % i + ws() + ":" + ws() + gen_json(depth + 1) for i in range(rng.randrange(3))]
    return "{" + ws() + ("," + ws()).join(members) + ws() + "}"


def json_ok(s):
    def refuse(name):
        raise ValueError(name)
    try:
        json.loads(s, parse_constant=refuse)
        return True
    except ValueError:
        return False


# ---- arithmetic --------------------------------------------------------------
def gen_arith(depth=0):
    if depth > 2 or rng.random() < 0.4:
        return rng.choice(["0", "7", "42", "105"])
    if rng.random() < 0.2:
        return "(" + gen_arith(depth + 1) + ")"
    return gen_arith(depth + 1) + rng.choice("+-*/") + gen_arith(depth + 1)


def arith_ok(s):
    if not s or not set(s) <= set("0123456789+-*/()"):
        return False
    if re.search(r"(?<![0-9])0[0-9]", s):  # Python reads 00 as zero; the grammar has no leading zeros
        return False
    try:
        tree = ast.parse(s, mode="eval")
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Add, ast.Sub, ast.Mult, ast.Div)):
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            continue
        if isinstance(node, ast.Constant) and type(node.value) is int:
            continue
        return False
    return True


# ---- regular grammars, as Python patterns written from the GBNF by hand ----
LIST_RE = re.compile(r"(?:- [a-z]{1,5}(?: [a-z]{1,5}){0,2}\n){1,4}")
MOVE = r"(?:O-O(?:-O)?|[KQRBN]?(?:[a-h]|[1-8])?x?[a-h][1-8](?:=[QRBN])?)[+#]?"
TURN = r"[1-9]\. " + MOVE + r"(?: " + MOVE + r")?"
CHESS_RE = re.compile(TURN + r"(?: " + TURN + r"){0,2}")
NAME = "[\u3041-\u3096\u30A1-\u30FA\u30FC\u4E00-\u9FFF]"
JAPANESE_RE = re.compile("(?:こんにちは|こんばんは|おはよう)、" + NAME + "{1,4}さん(?:！|。)[\U0001F600-\U0001F64F]?")
COUNTED_RE = re.compile(r"a{2,4}(?:b|c){0,2}(?:ab)+(?:ccc)?")


def gen_list():
    words = lambda: " ".join("".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 5)))
                             for _ in range(rng.randint(1, 3)))
    return "".join("- " + words() + "\n" for _ in range(rng.randint(1, 4)))


def gen_chess():
    def move():
        if rng.random() < 0.15:
            return rng.choice(["O-O", "O-O-O"]) + rng.choice(["", "+"])
        return (rng.choice(["", "N", "B", "Q"]) + rng.choice(["", "", "e", "3"]) + rng.choice(["", "x"]) +
                rng.choice("abcdefgh") + rng.choice("12345678") + rng.choice(["", "", "=Q"]) +
                rng.choice(["", "", "+", "#"]))
    turns = [str(rng.randint(1, 9)) + ". " + move() + rng.choice(["", " " + move()]) for _ in range(rng.randint(1, 3))]
    return " ".join(turns)


def gen_japanese():
    name = "".join(rng.choice("たなかタナカ田中ー") for _ in range(rng.randint(1, 4)))
    return (rng.choice(["こんにちは", "こんばんは", "おはよう"]) + "、" + name + "さん" + rng.choice("！。") +
            rng.choice(["", "😀", "🙏"]))


# ---- nested brackets: group ::= "[" (group|"x"){0,2} "]" | "(" group* ")" | "<" group+ ">"
def nested_ok(s):
    memo = {}

    def group(i):  # the set of ends of a group starting at i
        if i in memo:
            return memo[i]
        memo[i] = set()
        ends = set()
        if i < len(s) and s[i] == "[":
            reach, frontier = {i + 1}, {i + 1}
            for _ in range(2):
                nxt = set()
                for p in frontier:
                    if p < len(s) and s[p] == "x":
                        nxt.add(p + 1)
                    nxt |= group(p)
                reach |= nxt
                frontier = nxt
            ends |= {p + 1 for p in reach if p < len(s) and s[p] == "]"}
        for open_, close, least in (("(", ")", 0), ("<", ">", 1)):
            if i < len(s) and s[i] == open_:
                reach = {i + 1} if least == 0 else set()
                frontier, seen = {i + 1}, set()
                while frontier:
                    nxt = set()
                    for p in frontier:
                        nxt |= group(p)
                    nxt -= seen
                    seen |= nxt
                    reach |= nxt
                    frontier = nxt
                ends |= {p + 1 for p in reach if p < len(s) and s[p] == close}
        memo[i] = ends
        return ends

    # group is not left-recursive (each alternative starts with a bracket),
    # so the memo seeded with {} above is never read before it is final.
    reach = {0}
    accepted = set()
    for count in range(1, 4):
        reach = set().union(*(group(p) for p in reach)) if reach else set()
        if count >= 2:
            accepted |= reach
    return len(s) in accepted


def gen_nested(depth=0):
    def group(d):
        k = rng.randrange(3) if d < 3 else 0
        if k == 0:
            return "[" + "".join(rng.choice(["x", group(d + 1)]) if d < 3 else "x" for _ in range(rng.randint(0, 2))) + "]"
        if k == 1:
            return "(" + "".join(group(d + 1) for _ in range(rng.randint(0, 2))) + ")"
        return "<" + "".join(group(d + 1) for _ in range(rng.randint(1, 2))) + ">"
    return "".join(group(0) for _ in range(rng.randint(1, 4)))


def main():
    goldens = {}

    def judge(name, generate, alphabet, ok, **kw):
        goldens[name] = [[s, bool(ok(s))] for s in candidates(generate, alphabet, **kw)]

    judge("json.gbnf", gen_json, list('{}[],:" \n\t0123456789-+.eEtrufalsn\\"ab猫') + ["\x01"], json_ok)
    judge("arithmetic.gbnf", gen_arith, list("0123456789+-*/()"), arith_ok)
    judge("list.gbnf", gen_list, list("- \nabz"), lambda s: LIST_RE.fullmatch(s) is not None)
    judge("chess.gbnf", gen_chess, list("KQNBx=+#O-. 1289aeh"), lambda s: CHESS_RE.fullmatch(s) is not None)
    judge("japanese.gbnf", gen_japanese, list("こんにちはばおよう、たなかタナカ田中ーさん！。😀🙏a"),
          lambda s: JAPANESE_RE.fullmatch(s) is not None, max_len=60)
    judge("nested.gbnf", gen_nested, list("[]()<>x"), nested_ok)
    counted = ["".join(p) for n in range(10) for p in itertools.product("abc", repeat=n)]
    goldens["counted.gbnf accepted, of all strings over abc up to length 9"] = [
        s for s in counted if COUNTED_RE.fullmatch(s)]

    with open("goldens.json", "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, indent=0)
        f.write("\n")
    for name, rows in goldens.items():
        if rows and isinstance(rows[0], list):
            print(name, len(rows), "strings,", sum(ok for _, ok in rows), "accepted")
        else:
            print(name, len(rows), "accepted")


if __name__ == "__main__":
    main()
