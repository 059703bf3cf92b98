"""Which earlier patches a patch needs on the base, and in which order
the pull requests go.

Decided by applying, never by name: a patch whose diff applies on the
base exactly (git apply: hunks may move, their context may not; no
fuzz, no three-way merge) stands alone. One that does not is stacked on
the smallest set of earlier patches of the series, among those that
change a file it changes, with which it does apply. Everything happens
in a scratch index: the work tree is not touched.
"""

import itertools
import os

from .. import subproc
from ..fsutil import scratch_index

# Beyond this many candidates the search takes them all at once rather
# than trying every subset (2^12 index builds would take minutes).
MAX_CANDIDATES = 12


class Item:
    """One patch of the series: ``name`` (its file), ``mail`` (a path
    that git apply reads), ``files`` (the paths it changes), ``weight``
    (its place in the send order; lighter goes first)."""

    def __init__(self, name, mail, files, weight=(0,)):
        self.name = name
        self.mail = mail
        self.files = set(files)
        self.weight = weight


def applies(repo, base, mails):
    """True when the diffs of ``mails`` apply one after the other on the
    commit ``base`` of ``repo``, exactly."""
    index = scratch_index(os.path.join(repo, ".git", "prdeps.index"))
    env = {"GIT_INDEX_FILE": index}
    try:
        subproc.git(["read-tree", base], cwd=repo, env=env)
        for mail in mails:
            if subproc.git(["apply", "--cached", mail], cwd=repo, env=env,
                           check=False).returncode != 0:
                return False
        return True
    finally:
        if os.path.exists(index):
            os.unlink(index)


def _closure(chosen, needs, series):
    """``chosen`` with what each of them needs, in series order."""
    names = set()
    for item in chosen:
        names.add(item.name)
        names.update(needs[item.name])
    return [i for i in series if i.name in names]


def _smallest(repo, base, item, candidates, needs, series):
    """The fewest of ``candidates`` (with their own needs) on which
    ``item`` applies, or None."""
    usable = [c for c in candidates if needs.get(c.name) is not None]
    if len(usable) > MAX_CANDIDATES:
        sets = [_closure(usable, needs, series)]
    else:
        sets = [_closure(combo, needs, series)
                for k in range(1, len(usable) + 1)
                for combo in itertools.combinations(usable, k)]
    position = {i.name: n for n, i in enumerate(series)}
    # Fewest first; between equals the nearest ones, as the patch was
    # made right on top of them.
    sets.sort(key=lambda s: (len(s), sorted((-position[i.name] for i in s))))
    seen = set()
    for needed in sets:
        key = tuple(i.name for i in needed)
        if key in seen:
            continue
        seen.add(key)
        if applies(repo, base, [i.mail for i in needed] + [item.mail]):
            return [i.name for i in needed]
    return None


def plan(repo, base, series):
    """{name: the names it needs, in series order; None when it applies
    with no set of earlier patches} for every Item of ``series`` (the
    whole series in its order, so that a chosen patch may need any)."""
    needs = {}
    for k, item in enumerate(series):
        if applies(repo, base, [item.mail]):
            needs[item.name] = []
            continue
        candidates = [e for e in series[:k] if e.files & item.files]
        needs[item.name] = _smallest(repo, base, item, candidates, needs,
                                     series)
    return needs


def send_order(items, needs):
    """``items`` in the order their pull requests go: a patch after those
    it needs, otherwise the lightest first."""
    names = {i.name for i in items}
    done, order = set(), []
    pending = list(items)
    while pending:
        ready = [i for i in pending
                 if all(d in done or d not in names for d in needs[i.name])]
        # A cycle cannot happen (needs point to earlier patches); should
        # it, the series order breaks it.
        nxt = min(ready or pending[:1], key=lambda i: i.weight)
        pending.remove(nxt)
        done.add(nxt.name)
        order.append(nxt)
    return order
