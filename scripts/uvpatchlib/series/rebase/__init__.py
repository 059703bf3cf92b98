"""rebase: move a series to another upstream commit, or add a base.

The new base is fetched and verified like a pinned one, and every patch
is applied with a three-way merge (`git am -3`) in out/rebase, a git
repository of its own. Only when all of them are in does the series get
refreshed against the new base and deps.json rewritten; a conflict stops
with the pinned series untouched and the conflicted tree left in
out/rebase for `rebase --continue` or `rebase --abort`.

Its rooms, in the order a rebase goes through them: baseentry.py, the
deps.json entry of the base REF becomes (REF itself is fetched by
source/fetch.py); choose.py, which base's series to start from;
merge.py, the merges, --continue and --abort; finish.py, the refresh
and what became of each patch; state.py, out/rebase and what is saved
in it between runs.
"""

from .merge import abort, resume, start

__all__ = ["abort", "resume", "start"]
