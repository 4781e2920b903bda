#!/usr/bin/env sh
# Install OpenAI's Codex CLI (pinned; a native binary behind a small Node launcher) into a scratch folder,
# then print the folder whose node_modules/.bin must go first on PATH. tests/cli/test_client_clis.py reads
# what `ctx setup codex` wrote back through `codex mcp list` and `codex mcp get --json` (offline, no login;
# they parse ~/.codex/config.toml as Codex does, they do not start the server).
#
#   tests/codex/install.sh               # -> $CTX_CODEX_DIR or ~/.cache/context-harness/codex
#
# Idempotent: a second run with the same version installed does nothing (a first one takes ~10 s).
set -eu
CODEX_VERSION="0.171.0"
DIR="${CTX_CODEX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/context-harness/codex}"

if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed; Codex CLI cannot be installed" >&2
    exit 3
fi
mkdir -p "$DIR"
STAMP="$DIR/.installed-$CODEX_VERSION"
if [ ! -f "$STAMP" ] || [ ! -x "$DIR/node_modules/.bin/codex" ]; then
    cd "$DIR"
    [ -f package.json ] || echo '{"name": "ctx-codex-scratch", "private": true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "@openai/codex@$CODEX_VERSION" >&2
    touch "$STAMP"
fi
echo "$DIR"
