#!/usr/bin/env bash
# Install the Node side of the interop tests (TypeScript MCP SDK, MCP conformance suite, a Node 22
# binary) into tests/interop/node_modules, exactly as package-lock.json pins it.
#
# Idempotent: does nothing when node_modules already matches the lock file. The tests run this
# themselves when node_modules is missing or stale, so `make test` and CI need no extra step.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.thoughtline-lock.sha256
wanted="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: npm not found; installing Debian's nodejs and npm" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "install.sh: npm is required (Node.js >= 20 with npm); install it and run tests/interop/install.sh again" >&2
    exit 1
  fi
fi

# `npm ci` removes any old node_modules first, so a stale tree never survives.
npm ci --no-audit --no-fund --loglevel=error
echo "$wanted" > "$stamp"
