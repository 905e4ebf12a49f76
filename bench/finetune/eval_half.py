"""Search quality on one half of dev's questions, for the fine-tuning experiment (issue 8).

`python -m bench.finetune.eval_half --half b --model PATH` builds (or reuses) the whole dev
store with that model, like `bench.eval_reasoning`, and reports every mode over the answerable
questions whose answers all lie in the half's topics. Run from the main venv.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.embed_cache import cached_embedder, model_tag
from bench.eval_reasoning import build, run_questions, summarise
from bench.finetune.pairs import DEV_HALVES
from bench.replay import DATA
from thoughtline.storage.db import connect


def main(argv: Sequence[str] | None = None) -> None:
    """Print recall@5 / recall@10 / MRR per mode for the chosen half."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=sorted(DEV_HALVES), required=True)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "thoughtline-eval-stores")
    args = parser.parse_args(argv)
    data = json.loads((DATA / "dev.json").read_text())
    topic_of = {t["id"]: set(s["topics"]) for s in data["sequences"] for t in s["thoughts"]}
    half = DEV_HALVES[args.half]
    keep = {q["id"] for q in data["questions"] if q["answers"] and all(topic_of[a] <= half for a in q["answers"])}
    embedder = cached_embedder(args.model)
    workdir = args.workdir / model_tag(args.model)
    workdir.mkdir(parents=True, exist_ok=True)
    built = build(data, workdir, embedder)
    conn = connect(built.path, "wal", readonly=True)
    try:
        rows = run_questions(conn, embedder, [q for q in built.questions if q.qid in keep])
    finally:
        conn.close()
    out = summarise(rows)
    for mode, groups in out.items():
        a = groups["all"]
        print(
            f"half {args.half} {mode:8} n={int(a['n'])} r@5 {a['recall@5']:.3f} "
            f"r@10 {a['recall@10']:.3f} MRR {a['mrr']:.3f}"
        )


if __name__ == "__main__":
    main()
