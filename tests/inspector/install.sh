#!/usr/bin/env sh
# Install the official MCP Inspector CLI (built on the official TypeScript SDK) and a Node 22 binary,
# which it needs (>= 22.19), into a scratch folder, then print the folder whose node_modules/.bin
# must go first on PATH.
#
#   tests/inspector/install.sh              # -> $CTX_INSPECTOR_DIR or ~/.cache/context-harness/inspector
#   PATH="$(tests/inspector/install.sh)/node_modules/.bin:$PATH" mcp-inspector --cli -- ctx serve
#
# Idempotent: a second run with the same versions installed does nothing.
set -eu
INSPECTOR_VERSION="2.12.0"
NODE_SPEC="node@22"
DIR="${CTX_INSPECTOR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/context-harness/inspector}"

if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed; the MCP Inspector cannot be installed" >&2
    exit 3
fi
mkdir -p "$DIR"
STAMP="$DIR/.installed-$INSPECTOR_VERSION"
if [ ! -f "$STAMP" ] || [ ! -x "$DIR/node_modules/.bin/node" ]; then
    cd "$DIR"
    [ -f package.json ] || echo '{"name": "ctx-inspector-scratch", "private": true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "$NODE_SPEC" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >&2
    touch "$STAMP"
fi
echo "$DIR"
