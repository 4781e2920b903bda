#!/usr/bin/env sh
# Install Google's Gemini CLI (pinned) and a Node 22 binary into a scratch folder, then print the folder
# whose node_modules/.bin must go first on PATH. tests/cli/test_client_clis.py runs its `gemini mcp list`,
# which starts every configured stdio server and says whether it connected: offline, with no Google login.
#
#   tests/gemini/install.sh              # -> $CTX_GEMINI_DIR or ~/.cache/context-harness/gemini
#
# Idempotent: a second run with the same versions installed does nothing (a first one takes ~20 s).
set -eu
GEMINI_VERSION="0.61.0"
NODE_SPEC="node@22"
DIR="${CTX_GEMINI_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/context-harness/gemini}"

if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed; Gemini CLI cannot be installed" >&2
    exit 3
fi
mkdir -p "$DIR"
STAMP="$DIR/.installed-$GEMINI_VERSION"
if [ ! -f "$STAMP" ] || [ ! -x "$DIR/node_modules/.bin/gemini" ]; then
    cd "$DIR"
    [ -f package.json ] || echo '{"name": "ctx-gemini-scratch", "private": true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "$NODE_SPEC" "@google/gemini-cli@$GEMINI_VERSION" >&2
    touch "$STAMP"
fi
echo "$DIR"
