#!/usr/bin/env sh
# Install Anthropic's Claude Code (pinned; a native binary behind a small Node launcher) into a scratch folder,
# then print the folder whose node_modules/.bin must go first on PATH. tests/hooks/test_claude_code.py runs
# `claude -p` with the hooks `ctx hook install claude-code` wrote: offline and with no login, Claude Code still
# loads its settings and runs the SessionStart hook before it finds it cannot reach a model.
#
#   tests/claude/install.sh              # -> $CTX_CLAUDE_DIR or ~/.cache/context-harness/claude
#
# Idempotent: a second run with the same version installed does nothing (a first one takes ~30 s).
set -eu
CLAUDE_VERSION="2.1.197"
DIR="${CTX_CLAUDE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/context-harness/claude}"

if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed; Claude Code cannot be installed" >&2
    exit 3
fi
mkdir -p "$DIR"
STAMP="$DIR/.installed-$CLAUDE_VERSION"
if [ ! -f "$STAMP" ] || [ ! -x "$DIR/node_modules/.bin/claude" ]; then
    cd "$DIR"
    [ -f package.json ] || echo '{"name": "ctx-claude-scratch", "private": true}' > package.json
    npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
    touch "$STAMP"
fi
echo "$DIR"
