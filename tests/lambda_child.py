"""A Lambda container stand-in: the real handler, one Function URL event per stdin line.

Run as `python -m tests.lambda_child` with the function's environment. Each line on stdin is an
event (JSON); each response goes to stdout as one JSON line, flushed, the moment the handler
returns: the point where Lambda freezes the process, and where the probe stops this one.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from thoughtline.web.lambda_handler import handler


@dataclass
class Context:
    """The attributes of Lambda's context object anything might read."""

    function_name: str = "thoughtline"
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    memory_limit_in_mb: int = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def main() -> None:
    """Serve events until stdin closes."""
    for line in sys.stdin:
        response = handler(json.loads(line), Context())
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()
    handler.close()


if __name__ == "__main__":
    main()
