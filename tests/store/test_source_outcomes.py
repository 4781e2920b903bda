"""How each source's last sync ended, and the items skipped for what they hold, are kept in the
workspace on both backends (SQLite and a real PostgreSQL), so another process (``ctx sources``
opening its own Harness) knows them (issue 41)."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import NotConfigured
from support.workspace import Workspace

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["embedded", "postgres"])
def config(request: pytest.FixtureRequest, workspace: Workspace) -> config_mod.Config:
    db = 'path = "data/ctx.sqlite"\n'
    if request.param == "postgres":
        db += f'backend = "postgres"\nurl = "{request.getfixturevalue("pg_url")}"\n'
    workspace.config_path.write_text(textwrap.dedent(f"""\
        [db]
        {db}
        [embedding]
        provider = "disabled"

        [connectors.filesystem.docs]
        root = "docs"
        """), encoding="utf-8")
    workspace.write("a.md", "# A\n\nThe axolotl guide.\n")
    (workspace.docs / "blob.md").write_bytes(b"\x00\x01binary")
    return workspace.config()


async def status(config: config_mod.Config) -> tuple[str, str | None]:
    async with Harness.open(config) as other:  # another process: it never synced this source itself
        source = (await other.sources()).sources[0]
        return source.status, source.status_reason


async def test_the_last_outcome_is_kept_for_every_process(config: config_mod.Config, workspace: Workspace) -> None:
    async with Harness.open(config) as h:
        assert (await h.sync()).sources[0].added == 1
        assert h.store is not None and h.store.outcomes()["filesystem:docs"].outcome == "ok"
    assert await status(config) == ("ok", None)

    shutil.move(workspace.docs, workspace.root / "moved")
    async with Harness.open(config) as h:
        with pytest.raises(NotConfigured):
            await h.sync()
    shutil.move(workspace.root / "moved", workspace.docs)  # the folder is back: only the stored outcome tells
    state, reason = await status(config)
    assert state == "failing" and reason is not None
    assert reason.startswith("the last sync failed (20") and "fix its root in the config" in reason

    async with Harness.open(config) as h:
        await h.sync(dry_run=True)  # a dry run is not an outcome
    assert (await status(config))[0] == "failing"
    async with Harness.open(config) as h:
        await h.sync()
    assert await status(config) == ("ok", None)


async def test_skips_for_what_an_item_holds_are_remembered_by_fingerprint(config: config_mod.Config) -> None:
    async with Harness.open(config) as h:
        first = (await h.sync()).sources[0]
        assert first.skipped_reasons == {"binary": 1}
        assert h.store is not None
        remembered = h.store.remembered_skips("filesystem:docs")
        assert list(remembered) == ["blob.md"] and remembered["blob.md"][1] == "binary"
        again = (await h.sync()).sources[0]
        assert (again.unchanged, again.skipped_reasons) == (1, {"binary": 1})
        assert h.store.remembered_skips("filesystem:docs") == remembered
