#!/usr/bin/env sh
# Fetch axe-core (the accessibility checker the browser tests inject into every console page) from
# the npm registry at a pinned version, check the tarball against its pinned integrity (the sha512
# the registry publishes for that version), and unpack it into a cache folder; print the path of
# axe.min.js.
#
#   tests/axe/install.sh        # -> $CTX_AXE_DIR or ~/.cache/context-harness/axe-VERSION/axe.min.js
#
# Idempotent: a second run with the same version unpacked does nothing. Exit status 3: npm is not
# installed; 4: the registry could not be reached; 5: the tarball is not the pinned one.
set -eu
AXE_VERSION="4.14.1"
AXE_INTEGRITY="sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
DIR="${CTX_AXE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/context-harness/axe-$AXE_VERSION}"

if [ -f "$DIR/.installed" ] && [ -f "$DIR/axe.min.js" ]; then
    echo "$DIR/axe.min.js"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm is not installed; axe-core cannot be fetched" >&2
    exit 3
fi
mkdir -p "$DIR"
SCRATCH="$(mktemp -d "$DIR/.download.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
if ! (cd "$SCRATCH" && npm pack --silent --loglevel=error "axe-core@$AXE_VERSION" >/dev/null); then
    echo "install.sh: could not fetch axe-core@$AXE_VERSION from the npm registry" >&2
    exit 4
fi
TARBALL="$SCRATCH/axe-core-$AXE_VERSION.tgz"
GOT="sha512-$(openssl dgst -sha512 -binary "$TARBALL" | openssl base64 -A)"
if [ "$GOT" != "$AXE_INTEGRITY" ]; then
    echo "install.sh: axe-core-$AXE_VERSION.tgz is $GOT, not the pinned $AXE_INTEGRITY" >&2
    exit 5
fi
tar -xzf "$TARBALL" -C "$SCRATCH" package/axe.min.js package/LICENSE
mv "$SCRATCH/package/axe.min.js" "$SCRATCH/package/LICENSE" "$DIR/"
touch "$DIR/.installed"
echo "$DIR/axe.min.js"
