"""What the scripts that record llama.cpp's outputs as test references share
(scripts/make_smollm2_reference.py, scripts/make_gemma_reference.py): a
prompt's first-position log-probabilities and a greedy continuation with
llama.cpp's top-1 margin at every step, from a llama_cpp.Llama made with
logits_all=True."""
import math


def log_softmax(row):
    row = [float(v) for v in row]
    m = max(row)
    s = sum(math.exp(v - m) for v in row)
    return [v - m - math.log(s) for v in row]


def greedy_run(llm, ids, n_tokens, eog=(), top_n=20):
    """(top_n [id, log-prob] pairs after the prompt, greedy ids, margins):
    n_tokens greedy steps, stopping early after a token in `eog`."""
    llm.reset()
    llm.eval(ids)
    first = log_softmax(list(llm.scores[len(ids) - 1]))
    top = sorted(range(len(first)), key=lambda i: -first[i])[:top_n]
    greedy, margins = [], []
    row = first
    for _ in range(n_tokens):
        best = sorted(range(len(row)), key=lambda i: -row[i])[:2]
        tok = best[0]
        greedy.append(tok)
        margins.append(row[best[0]] - row[best[1]])   # logits differ as log-probs do
        if tok in eog:
            break
        llm.eval([tok])
        row = [float(v) for v in llm.scores[llm.n_tokens - 1]]
    return [[i, first[i]] for i in top], greedy, margins
