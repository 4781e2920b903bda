"""``ctx check`` for a workspace that may not even open: a damaged SQLite file cannot be checked or
repaired from inside (``Harness.open`` fails on it, or SQLite's ``quick_check`` condemns it). With
``repair`` the file is moved aside (never deleted: ``<name>.damaged-<time>``) and the sources are
read again into a new one, so every document still on disk comes back; vectors are made again by
``ctx embed pending``. Everything else is ``Harness.check``'s business (``ingest/check.py``).
"""

from __future__ import annotations

from context_harness.config import Config
from context_harness.core.harness import Harness
from context_harness.errors import StorageFault
from context_harness.extensions import Extensions, collect_extensions
from context_harness.models import CheckProblem, CheckReport
from context_harness.store.faults import set_aside


async def check_workspace(config: Config, extensions: Extensions | None = None, repair: bool = False) -> CheckReport:
    """``Harness.check`` on the workspace of ``config``, also when its SQLite file is damaged."""
    try:
        async with Harness.open(config, extensions) as harness:
            report = await harness.check(repair=repair)
    except StorageFault as fault:
        if fault.kind != "sqlite_damaged":
            raise
        report = CheckReport(consistent=False, documents=0, chunks=0, vectors=0,
                             problems=[CheckProblem(kind="sqlite", message=fault.message)])
    damaged = [p for p in report.problems if p.kind == "sqlite" and not p.repaired]
    if not repair or not damaged:
        return report
    moved = set_aside(config.db.path)
    async with Harness.open(config, extensions) as harness:
        synced = await harness.sync(full=True, embed=False)
        report = await harness.check(repair=True)
    documents = sum(s.added + s.updated + s.unchanged for s in synced.sources)
    note = (f"the SQLite file was damaged; moved it to {moved.name} and read the sources again "
            f"({documents} documents)")
    if harness.vectors is not None:
        note += "; run `ctx embed pending` to embed them again"
    report.problems.insert(0, CheckProblem(kind="sqlite", message=note, repaired=True))
    return report


async def check_installed(config: Config, repair: bool = False) -> CheckReport:
    """``ctx check``: ``check_workspace`` with the extensions installed packages declare."""
    return await check_workspace(config, collect_extensions(), repair)


__all__ = ["check_installed", "check_workspace"]
