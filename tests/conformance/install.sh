#!/usr/bin/env sh
# Install the official MCP conformance suite (and a Node 22 binary, which it needs) into a scratch
# folder, then print the folder whose node_modules/.bin must go first on PATH.
#
#   tests/conformance/install.sh            # -> $CTX_CONFORMANCE_DIR or ~/.cache/context-harness/conformance
#   PATH="$(tests/conformance/install.sh)/node_modules/.bin:$PATH" conformance --help
#
# Idempotent: a second run with the same versions installed does nothing.
set -eu
SUITE_VERSION="0.1.16"
NODE_SPEC="node@22"
DIR="${CTX_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/context-harness/conformance}"

if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed; the conformance suite cannot be installed" >&2
    exit 3
fi
mkdir -p "$DIR"
STAMP="$DIR/.installed-$SUITE_VERSION"
if [ ! -f "$STAMP" ] || [ ! -x "$DIR/node_modules/.bin/conformance" ]; then
    cd "$DIR"
    [ -f package.json ] || echo '{"name": "ctx-conformance-scratch", "private": true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "$NODE_SPEC" "@modelcontextprotocol/conformance@$SUITE_VERSION" >&2
    touch "$STAMP"
fi
echo "$DIR"
