"""A rebase's work folder, out/rebase: a git repository of its own,
whichever base the rebase starts from, holding in its .git the state of
the rebase, copies of the patches being moved and the old series' refs.
"""

import json
import os

from ... import subproc
from ...fsutil import write_atomic

STATE = "uvpatch-rebase.json"       # in out/rebase/.git
PATCHES = "uvpatch-rebase-patches"  # copies of the series being moved
OLD_REFS = "refs/uvpatch-old/"      # the old series, for the merge bases


def work_dir(out_root):
    """out/rebase: one rebase at a time, for every base."""
    return os.path.join(out_root, "rebase")


def load(work):
    """The saved state of the rebase in ``work``, or None."""
    try:
        with open(os.path.join(work, ".git", STATE), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save(work, state):
    write_atomic(os.path.join(work, ".git", STATE),
                 json.dumps(state, indent=2) + "\n")


def head(repo):
    return subproc.git_out(["rev-parse", "HEAD"], cwd=repo)
