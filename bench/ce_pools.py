"""Write the hybrid's top-10 pool of every dev and train question to JSON, for the cross-encoder trial.

Train is cut into the five stores `bench.train_ranker --shards 5` uses. Each question keeps its
shipped abstention verdict and doubt, and each candidate its text and whether it answers. The
fine-tuning venv (which has no service) reads the file: `bench/finetune/cross_encoder.py`.

    python -m bench.ce_pools --out build/ce-pools.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.embed_cache import cached_embedder, model_tag
from bench.eval_reasoning import build
from bench.ranker_data import shards
from bench.replay import load_split
from thoughtline.library.dense import DenseIndex
from thoughtline.library.retrieval import Tuning, hybrid_search
from thoughtline.storage.db import connect

POOL = 10


def pools(workdir: Path) -> list[dict[str, Any]]:
    """One record per question of dev and of train's five stores."""
    embedder = cached_embedder()
    out: list[dict[str, Any]] = []
    for split, pieces in (("dev", [load_split("dev")]), ("train", shards(load_split("train"), 5))):
        for shard, data in enumerate(pieces):
            built = build(data, workdir, embedder)
            conn = connect(built.path, "wal", readonly=True)
            try:
                bodies = {int(r[0]): str(r[1]) for r in conn.execute("SELECT id, body FROM thoughts")}
                index, ranking = DenseIndex(), replace(Tuning(), abstain=False)
                for q in built.questions:
                    hits = hybrid_search(conn, embedder, q.text, limit=POOL, tuning=ranking, index=index).hits
                    verdict = hybrid_search(conn, embedder, q.text, limit=1, index=index)
                    out.append({
                        "split": split, "shard": shard, "qid": q.qid, "kind": q.kind, "query": q.text,
                        "answers": sorted(q.answers), "doubt": verdict.doubt, "abstained": verdict.abstained,
                        "candidates": [
                            {"id": h.record.thought_id, "text": bodies[h.record.thought_id],
                             "answers": h.record.thought_id in q.answers}
                            for h in hits
                        ],
                    })  # fmt: skip
            finally:
                conn.close()
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Write the pools file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("build/ce-pools.json"))
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "thoughtline-eval-stores")
    args = parser.parse_args(argv)
    records = pools(args.workdir / model_tag(None))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records))
    print(f"{len(records)} questions -> {args.out}")


if __name__ == "__main__":
    main()
