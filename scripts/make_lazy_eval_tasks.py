#!/usr/bin/env python3
"""Writes a long-context task set for `prepack eval lazy --tasks FILE`.

Reads any plain UTF-8 text and writes JSON lines, one task each, that say
how to build the document rather than holding it: the text file (relative
to the tasks file), the byte where the document starts, its length in
tokens of the model evaluated, the fact sentences planted in it and at what
depth, the question and the accepted answers. `prepack eval lazy` builds
the document with the model's own tokenizer (cli/lazy_tasks.h).

Task kinds:
  needle  one planted fact ("The secret number of the blue lantern is
          7468."), a question about it; at depths 10%, 50% and 90% of
          documents of each length
  multi   3 or 4 planted facts of the same form at different depths; the
          question asks for one of them, or for two (both must be named)
  qa      questions about the text itself, whose answer lies in the window
          (a hand-written list for Botchan, tests/data/lazy_eval/botchan.txt;
          --qa FILE gives one for another text)

A task line:
  {"id": "needle-1k-d10", "kind": "needle", "text": "botchan.txt",
   "start_byte": 18211, "tokens": 1000,
   "facts": [{"depth": 0.1, "sentence": "The secret number of ... is 7468."}],
   "question": "What is the secret number of ...?",
   "answers": ["7468", "7,468"]}
`answers`: any one suffices; an entry that is itself a list of strings is
accepted only when the answer holds all of them (a question asking for two
values). Matching is case-insensitive containment in the model's answer.
qa tasks also carry "evidence": a phrase of the text that holds the answer,
which the document built must contain.

Deterministic: the same text, options and --seed give the same file.

Usage:
  scripts/make_lazy_eval_tasks.py --text tests/data/lazy_eval/botchan.txt \\
      --out tests/data/lazy_eval/botchan_tasks.jsonl --seed 39
  scripts/make_lazy_eval_tasks.py --text my_book.txt --out my_tasks.jsonl \\
      --lengths 1000,3000 --qa my_questions.jsonl
--qa FILE: JSON lines {"question": "...", "answers": ["..."], "evidence":
"a phrase of the text holding the answer", "tokens": 2000 (optional)}.
"""
import argparse
import json
import os
import random
import re
import sys

# The Botchan questions: each answer lies in its evidence passage, and the
# question does not give it away.
BOTCHAN_QA = [
    {"question": "What is the name of the maid who had been with the narrator's family for about ten years?",
     "answers": ["Kiyo"], "evidence": "But our maid Kiyo, who had been with us for ten years", "tokens": 1000},
    {"question": "How much money did the old maid give the narrator, which he dropped into a cesspool?",
     "answers": ["three yen", "3 yen"], "evidence": "brought three yen in silver", "tokens": 2000},
    {"question": "From which floor of the school building did the narrator jump as a grammar school boy?",
     "answers": ["second", "2nd"], "evidence": "jumping from the second story", "tokens": 1000},
    {"question": "What monthly salary did the middle school offer for the teacher of mathematics?",
     "answers": ["forty yen", "40 yen"], "evidence": "teacher of mathematics for forty yen", "tokens": 4000},
    {"question": "On which island was the middle school that needed a teacher of mathematics?",
     "answers": ["Shikoku"], "evidence": "A middle\nschool in Shikoku", "tokens": 2000},
    {"question": "In his letter, what nickname did the narrator give the principal?",
     "answers": ["Badger"], "evidence": "'Badger' for the principal", "tokens": 1000},
    {"question": "In his letter, what nickname did the narrator give the teacher of mathematics?",
     "answers": ["Porcupine"], "evidence": "'Porcupine' the teacher", "tokens": 6000},
    {"question": "What does the head teacher wear all the year round?",
     "answers": ["red shirt", "red flannel"], "evidence": "wears a red shirt all the year round", "tokens": 2000},
    {"question": "How many bowls of noodles did the narrator eat that night at the noodle shop?",
     "answers": ["four", "4"], "evidence": "I ate four bowls", "tokens": 4000},
    {"question": "What was the name of the teacher of English, whose complexion was very pale?",
     "answers": ["Koga"], "evidence": "one Mr. Koga,\nteacher of English", "tokens": 6000},
]

COLOURS = ["blue", "red", "green", "yellow", "silver", "golden", "purple", "white", "black", "orange", "grey",
           "crimson"]
OBJECTS = ["lantern", "kettle", "umbrella", "bicycle", "teapot", "violin", "compass", "mirror", "suitcase", "clock",
           "lamp", "basket", "carpet", "hammer", "bottle", "drum"]
SYLLABLES_A = ["ta", "ve", "mo", "ri", "ka", "lo", "ne", "su", "da", "fi", "ro", "me", "za", "bo"]
SYLLABLES_B = ["rin", "del", "mar", "ska", "vo", "len", "tro", "qua", "nis", "bel", "dor", "wen"]

# The forms a planted fact takes: (sentence, question, kind of value).
FORMS = [
    ("The secret number of the {c} {o} is {v}.", "What is the secret number of the {c} {o}?", "number"),
    ("The {c} {o} was made by a craftsman named {v}.", "What was the name of the craftsman who made the {c} {o}?",
     "name"),
    ("The {c} {o} is kept in a village called {v}.", "In which village is the {c} {o} kept?", "name"),
]

ABBREVIATIONS = {"Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Prof", "Mt", "No", "vs", "etc", "Capt", "Col", "Gen",
                 "Rev", "Messrs"}
CLOSERS = "\"')]"
OPENERS = "\"'(["


def sentence_starts(text):
    """Where sentences begin: after '.', '!' or '?' (and closing quotes or
    brackets) and whitespace, before an upper-case letter, a digit or an
    opening quote; not after an abbreviation such as "Mr." or an initial.
    The same rule as cli/lazy_tasks.cpp's SentenceBoundaries."""
    starts = []
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if ch in ".!?":
            j = i + 1
            while j < n and text[j] in CLOSERS:
                j += 1
            if j < n and text[j].isspace():
                k = j
                while k < n and text[k].isspace():
                    k += 1
                ok = k < n and (text[k].isupper() or text[k].isdigit() or text[k] in OPENERS)
                if ok and ch == ".":
                    w = i
                    while w > 0 and text[w - 1].isalpha():
                        w -= 1
                    word = text[w:i]
                    if word in ABBREVIATIONS or (len(word) == 1 and word.isupper()):
                        ok = False
                if ok:
                    starts.append(k)
                i = k
                continue
        i += 1
    return starts


def byte_offset(text, index):
    return len(text[:index].encode("utf-8"))


def made_up_name(rng, text_lower, used):
    while True:
        name = (rng.choice(SYLLABLES_A) + rng.choice(SYLLABLES_B)).capitalize()
        if rng.random() < 0.5:
            name += rng.choice(["a", "o", "e", "is"])
        if name.lower() not in text_lower and name not in used:
            used.add(name)
            return name


def make_value(kind, rng, text_lower, used):
    if kind == "number":
        while True:
            v = str(rng.randint(1000, 9999))
            if v not in text_lower and v not in used:
                used.add(v)
                return v
    return made_up_name(rng, text_lower, used)


def value_answers(kind, v):
    """The spellings that count: a number with or without its comma."""
    if kind == "number" and len(v) == 4:
        return [v, v[0] + "," + v[1:]]
    return [v]


def length_label(tokens):
    return f"{round(tokens / 1000)}k" if tokens >= 1000 else f"{tokens}t"


class Maker:
    def __init__(self, text, text_field, seed, chars_per_token):
        self.text = text
        self.text_lower = text.lower()
        self.text_field = text_field
        self.rng = random.Random(seed)
        self.cpt = chars_per_token
        self.starts = sentence_starts(text)
        self.used_values = set()
        if not self.starts:
            sys.exit("make_lazy_eval_tasks: the text has no sentence boundaries to start documents at")

    def window_chars(self, tokens):
        return int(tokens * self.cpt)

    def random_start(self, tokens):
        """A sentence start leaving room for the document, with a margin for
        tokenizers that spend fewer tokens on a character than assumed."""
        room = len(self.text) - int(1.5 * self.window_chars(tokens))
        candidates = [s for s in self.starts if s <= room]
        if not candidates:
            sys.exit(f"make_lazy_eval_tasks: the text ({len(self.text)} characters) is too short for documents of "
                     f"{tokens} tokens at {self.cpt} characters a token")
        return self.rng.choice(candidates)

    def start_before(self, index):
        """The last sentence start at or before `index` (or the text's start)."""
        best = 0
        for s in self.starts:
            if s > index:
                break
            best = s
        return best

    def facts(self, form, n):
        sentence, question, kind = form
        colours = self.rng.sample(COLOURS, n)
        objects = self.rng.sample(OBJECTS, n)
        out = []
        for c, o in zip(colours, objects):
            v = make_value(kind, self.rng, self.text_lower, self.used_values)
            out.append({"sentence": sentence.format(c=c, o=o, v=v), "question": question.format(c=c, o=o),
                        "value": v, "kind": kind, "c": c, "o": o})
        return out

    def task(self, tid, kind, start, tokens, facts, question, answers, extra=None):
        t = {"id": tid, "kind": kind, "text": self.text_field, "start_byte": byte_offset(self.text, start),
             "tokens": tokens}
        if facts:
            t["facts"] = facts
        t["question"] = question
        t["answers"] = answers
        if extra:
            t.update(extra)
        return t

    def check_values_absent(self, start, tokens, values):
        window = self.text_lower[start:start + int(1.5 * self.window_chars(tokens))]
        for v in values:
            assert v.lower() not in window, v

    def needle(self, tokens, depth):
        form = FORMS[0] if self.rng.random() < 0.6 else self.rng.choice(FORMS[1:])
        (f,) = self.facts(form, 1)
        start = self.random_start(tokens)
        self.check_values_absent(start, tokens, [f["value"]])
        return self.task(f"needle-{length_label(tokens)}-d{round(depth * 100):02d}", "needle", start, tokens,
                         [{"depth": depth, "sentence": f["sentence"]}], f["question"],
                         value_answers(f["kind"], f["value"]))

    def multi(self, tokens, two):
        n = self.rng.choice([3, 4])
        form = FORMS[0] if two or self.rng.random() < 0.6 else self.rng.choice(FORMS[1:])
        facts = self.facts(form, n)
        depths = [round((i + 0.5) / n + self.rng.uniform(-0.08, 0.08), 2) for i in range(n)]
        start = self.random_start(tokens)
        self.check_values_absent(start, tokens, [f["value"] for f in facts])
        planted = [{"depth": d, "sentence": f["sentence"]} for d, f in zip(depths, facts)]
        if not two:
            asked = self.rng.randrange(n)
            f = facts[asked]
            return self.task(f"multi-{length_label(tokens)}-{n}facts-ask{asked + 1}", "multi", start, tokens, planted,
                             f["question"], value_answers(f["kind"], f["value"]))
        a, b = sorted(self.rng.sample(range(n), 2))
        fa, fb = facts[a], facts[b]
        question = (f"What are the secret numbers of the {fa['c']} {fa['o']} and of the {fb['c']} {fb['o']}?")
        answers = [[x, y] for x in value_answers("number", fa["value"]) for y in value_answers("number", fb["value"])]
        return self.task(f"multi-{length_label(tokens)}-{n}facts-ask{a + 1}+{b + 1}", "multi", start, tokens, planted,
                         question, answers)

    def qa(self, item, index, default_tokens):
        tokens = int(item.get("tokens", default_tokens))
        evidence = item["evidence"]
        at = self.text.find(evidence)
        if at < 0:
            sys.exit(f"make_lazy_eval_tasks: qa {index + 1}: the evidence {evidence!r} is not in the text")
        inside = self.text_lower[at:at + len(evidence)]
        if not any(isinstance(a, str) and a.lower() in inside for a in item["answers"]):
            sys.exit(f"make_lazy_eval_tasks: qa {index + 1}: no answer occurs in the evidence {evidence!r}")
        if any(a.lower() in item["question"].lower() for a in item["answers"]):
            sys.exit(f"make_lazy_eval_tasks: qa {index + 1}: the question gives the answer away")
        # The evidence at a depth drawn from 10% to 60% of the window (well
        # inside it even for a tokenizer with a tenth fewer characters a token).
        depth = self.rng.uniform(0.1, 0.6)
        start = self.start_before(max(0, at - int(depth * self.window_chars(tokens))))
        end = start + self.window_chars(tokens)
        assert at + len(evidence) <= end
        window = self.text_lower[start:end]
        assert any(a.lower() in window for a in item["answers"])
        tid = f"qa-{length_label(tokens)}-{index + 1:02d}"
        return self.task(tid, "qa", start, tokens, [], item["question"], item["answers"], {"evidence": evidence})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--text", required=True, help="a plain UTF-8 text file")
    p.add_argument("--out", required=True, help="the tasks file (JSON lines) to write")
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--lengths", default="1000,2000,4000,6000", help="document lengths in tokens")
    p.add_argument("--depths", default="0.1,0.5,0.9", help="needle depths (fractions of the document)")
    p.add_argument("--chars-per-token", type=float, default=4.0,
                   help="characters a token of the target model's tokenizer covers (SmolLM2 on Botchan: 4.0)")
    p.add_argument("--qa", default="", help="questions about the text (JSON lines); default: the Botchan list "
                                            "when the text holds its passages, else none")
    a = p.parse_args()

    with open(a.text, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit(f"make_lazy_eval_tasks: {a.text} is not UTF-8 text: {e}")
    lengths = [int(x) for x in a.lengths.split(",") if x]
    depths = [float(x) for x in a.depths.split(",") if x]
    out_dir = os.path.dirname(os.path.abspath(a.out))
    text_field = os.path.relpath(os.path.abspath(a.text), out_dir)
    m = Maker(text, text_field, a.seed, a.chars_per_token)
    if text.startswith("\ufeff"):   # documents never start inside the byte-order mark
        m.starts = [s for s in m.starts if s > 0]

    if a.qa:
        with open(a.qa, encoding="utf-8") as f:
            questions = [json.loads(line) for line in f if line.strip()]
    elif all(q["evidence"] in text for q in BOTCHAN_QA):
        questions = BOTCHAN_QA
    else:
        questions = []
        print("make_lazy_eval_tasks: no qa tasks (the text is not Botchan; --qa FILE gives questions)",
              file=sys.stderr)

    tasks = []
    for tokens in lengths:
        for d in depths:
            tasks.append(m.needle(tokens, d))
    for tokens in lengths:
        tasks.append(m.multi(tokens, two=False))
        tasks.append(m.multi(tokens, two=True))
    for i, q in enumerate(questions):
        tasks.append(m.qa(q, i, lengths[min(i, len(lengths) - 1)]))

    ids = [t["id"] for t in tasks]
    assert len(ids) == len(set(ids)), "task ids repeat"
    with open(a.out, "w", encoding="utf-8") as f:
        for t in tasks:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print(f"make_lazy_eval_tasks: {len(tasks)} tasks written to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
