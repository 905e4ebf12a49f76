"""Measure a Lambda package's cold start: a fresh process imports the handler, then serves a write
and a search (the model loads there). Run with Lambda's Python on Linux, after `sam build`:

    python3.12 infra/aws/cold_start.py .aws-sam/build/ThoughtlineFunction 5

Each run is a new process with bytecode writing off, as on Lambda's read-only /var/task, so an
uncompiled package pays for compiling every module it imports. Prints the median of the runs.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from compile_imported import run_child

CHILD = """
import json, sys, time
start = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from thoughtline.web.lambda_handler import handler
imported = time.perf_counter()

class Context:
    function_name = "thoughtline"
    aws_request_id = "cold"
    memory_limit_in_mb = 1024
    def get_remaining_time_in_millis(self):
        return 29000

marks = []
for body in json.loads(sys.argv[2]):
    event = json.loads(sys.argv[3])
    event["body"] = json.dumps(body)
    assert handler(event, Context())["statusCode"] == 200
    marks.append(time.perf_counter())
print(json.dumps({"import": imported - start, "first_call": marks[0] - imported, "first_search": marks[1] - marks[0]}))
"""


def one_run(package: Path) -> dict[str, float]:
    """Timings of one fresh process."""
    run = run_child(package, CHILD, "cold")
    if run.returncode != 0:
        raise SystemExit(f"the handler failed in {package}:\n{run.stderr[-2000:]}")
    timings: dict[str, float] = json.loads(run.stdout.strip().splitlines()[-1])
    return timings


def main() -> None:
    """Print the median timings over the runs, and the package size."""
    package = Path(sys.argv[1]).resolve()
    runs = [one_run(package) for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5)]
    size = sum(f.stat().st_size for f in package.rglob("*") if f.is_file())
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(
        f"package {size / 2**20:.1f} MiB; median of {len(runs)}: import {median['import']:.2f} s, "
        f"first call {median['first_call']:.2f} s, first search {median['first_search']:.2f} s"
    )


if __name__ == "__main__":
    main()
