"""Byte-compile the modules a Lambda cold start and its first search import (issue 10).

Run by the Makefile with Lambda's Python (a .pyc is specific to one Python version) after the
package is assembled: a child process imports the handler from the package alone, serves one write
and one search (loading the model), and lists every module file it loaded from the package; those
are compiled as `unchecked-hash` .pyc files (a zip does not keep file times exactly, and
/var/task is read-only, so a timestamp check could only ever recompile in memory). Compiling
everything would not fit: the package would pass Lambda's 250 MiB unzipped limit.

Usage: python3.12 compile_imported.py PACKAGE_DIR
"""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
import tempfile
from pathlib import Path

HOST = "build.lambda-url.us-east-1.on.aws"

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from thoughtline.web.lambda_handler import handler

class Context:
    function_name = "thoughtline"
    aws_request_id = "build"
    memory_limit_in_mb = 1024
    def get_remaining_time_in_millis(self):
        return 29000

for body in json.loads(sys.argv[2]):
    event = json.loads(sys.argv[3])
    event["body"] = json.dumps(body)
    response = handler(event, Context())
    assert response["statusCode"] == 200, response
handler.close()
root = sys.argv[1]
files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
print(json.dumps(sorted(f for f in files if f and f.startswith(root) and f.endswith(".py"))))
"""


def call(request_id: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    """A JSON-RPC tools/call body."""
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def event() -> dict[str, object]:
    """A Function URL event for POST /mcp-compat (the body is filled in per call)."""
    token = "b" * 40
    headers = {
        "host": HOST,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        "authorization": f"Bearer {token}",
        "x-forwarded-proto": "https",
    }
    http = {"method": "POST", "path": "/mcp-compat", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"}
    context = {"domainName": HOST, "http": http, "requestId": "build", "stage": "$default"}
    return {
        "version": "2.0",
        "rawPath": "/mcp-compat",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": False,
    }


def run_child(package: Path, child: str, tag: str) -> subprocess.CompletedProcess[str]:
    """Run `child` in a fresh process that serves a write and a search from `package`, as Lambda would."""
    thought = {"thought": tag, "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1}
    bodies = [call(1, "sequentialthinking", thought), call(2, "search_thoughts", {"query": tag})]
    with tempfile.TemporaryDirectory() as data:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "MCP_API_TOKEN": "b" * 40,
            "THOUGHTLINE_DATA_DIR": data,
            "THOUGHTLINE_JOURNAL": "truncate",
            "AWS_LAMBDA_FUNCTION_NAME": tag,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        args = [sys.executable, "-c", child, str(package), json.dumps(bodies), json.dumps(event())]
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, check=False)


def imported_files(package: Path) -> list[str]:
    """The package's module files a cold start, a write and a search load."""
    run = run_child(package, CHILD, "build")
    if run.returncode != 0:
        raise SystemExit(f"could not run the handler from {package}:\n{run.stderr[-2000:]}")
    files: list[str] = json.loads(run.stdout.strip().splitlines()[-1])
    return files


def main() -> None:
    """Compile what the handler imports; print how many files."""
    package = Path(sys.argv[1]).resolve()
    files = imported_files(package)
    for name in files:
        py_compile.compile(name, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    print(f"byte-compiled {len(files)} modules the handler imports (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
