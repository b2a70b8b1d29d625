#!/usr/bin/env python3
"""Plot prefill speedup over padded batching against prompt-length variance.

Reads the JSON lines written by scripts/sweep_prefill.sh (one
`prepack bench prefill --json` object per line) and draws, for each layout,
its measured speedup over `padded` against the batch's length CV, next to the
ideal speedup (padded computed tokens / real tokens).

    python3 scripts/plot_prefill.py docs/prefill_sweep.jsonl docs/prefill_speedup.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    runs = [json.loads(line) for line in open(argv[1]) if line.strip()]
    if not runs:
        print(f"{argv[1]}: no runs", file=sys.stderr)
        return 1
    runs.sort(key=lambda r: r["workload"]["cv"])
    cvs = [r["workload"]["cv"] for r in runs]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(cvs, [r["ideal_speedup_vs_padded"] for r in runs], "k--", label="ideal (padded tokens / real tokens)")
    layouts = [res["layout"] for res in runs[0]["results"] if res["layout"] != "padded"]
    markers = {"sorted": "s", "packed": "o", "ragged": "^"}
    for layout in layouts:
        ys = []
        for r in runs:
            match = [res for res in r["results"] if res["layout"] == layout]
            ys.append(match[0]["speedup_vs_padded"] if match else float("nan"))
        ax.plot(cvs, ys, marker=markers.get(layout, "x"), label=layout)
    w = runs[0]["workload"]
    ax.set_xlabel("coefficient of variation of prompt length")
    ax.set_ylabel("prefill speedup over padded")
    ax.set_title(f"{runs[0]['model']}, {w['count']} prompts, mean length ~{w['mean']:.0f}, "
                 f"{runs[0]['threads']} threads")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)
    print(f"wrote {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
