"""Which series a rebase starts from: each base's series is tried on REF.

The base nearest to REF in commits is not always the one whose series
gets furthest there: a series made for an older base carries backports
a newer one does not need, and REF may lack them. So, without --base,
every base's series is applied onto REF in a scratch repository, the
way the rebase itself applies it (`git am -3`, backports REF already has
dropped), and stops at its first conflict. The series that gets
furthest wins; among equals, the one that completes, then the nearest.
What each series did is printed, so the choice can be checked.
"""

import os
import re
import tempfile

from ... import console, subproc
from ...errors import UvPatchError
from ...source import gitref
from ...source.fetch import Fetcher
from ...fsutil import remove_tree
from ..apply import AM_IDENTITY, _build, declare_shallow
from ..manifest import Manifest, validate
from .state import head

_ORIGIN = re.compile(r"^Origin: upstream, \S*/commit/([0-9a-f]{40})\s*$",
                     re.M)


def tree_sources(source):
    """The sources, beyond the usual ones, to take a base's tree from:
    rebase's --source when it is a local git repository or bundle (it
    holds every base, not only REF)."""
    if source and os.path.exists(source) and gitref.is_git_source(source):
        return [os.path.abspath(source)]
    return []


def fetch_base(manifest, also):
    """A base's verified tree: the cache, ``also``, UVPATCH_SOURCE, then
    deps.json's sources."""
    return Fetcher(manifest).fetch(also=also)


def has_commit(repo, commit):
    return repo is not None and subproc.git(
        ["cat-file", "-e", commit + "^{commit}"], cwd=repo,
        check=False).returncode == 0


def already_upstream(manifest, found):
    """{patch file: upstream commit} for the backports whose upstream
    commit REF already has."""
    has = {}
    repo = found["repo"]
    for e in manifest.series:
        with open(manifest.patch_path(e), encoding="utf-8",
                  errors="surrogateescape", newline="") as f:
            m = _ORIGIN.search(f.read())
        if m and has_commit(repo, m.group(1)) and subproc.git(
                ["merge-base", "--is-ancestor", m.group(1),
                 found["commit"]], cwd=repo, check=False).returncode == 0:
            has[e["file"]] = m.group(1)
    return has


def distances(manifest, found):
    """{base name: commits between it and REF} for the bases whose commit
    the source's history holds."""
    repo, commit = found["repo"], found["commit"]
    found_d = {}
    for data in manifest.doc["bases"]:
        base = data["upstream"]["commit"]
        if has_commit(repo, base):
            found_d[data["name"]] = int(subproc.git_out(
                ["rev-list", "--count", "%s...%s" % (base, commit)],
                cwd=repo))
    return found_d


class Trial:
    """What one base's series did on REF."""

    def __init__(self, base, index, distance):
        self.base = base
        self.index = index              # its place in deps.json
        self.distance = distance        # commits to REF, or None
        self.applied = 0
        self.dropped = 0
        self.stop = None                # (patch file, [conflicted files])

    @property
    def through(self):
        """How far it got: patches applied or dropped before a stop."""
        return self.applied + self.dropped

    def rank(self):
        """A series that applies whole first; else the furthest; then
        the nearest base, then deps.json's order."""
        near = self.distance if self.distance is not None else 1 << 30
        whole = self.stop is None
        return (whole, 0 if whole else self.through, -near, -self.index)

    def describe(self, label):
        total = len(self.base.series)
        away = "" if self.distance is None else \
            " (%d commits from %s)" % (self.distance, label)
        done = "%d of %d applied" % (self.applied, total)
        if self.dropped:
            done += ", %d dropped (already upstream)" % self.dropped
        if self.stop is None:
            return "the %s series%s: applies whole: %s" % (
                self.base.name, away, done)
        name, files = self.stop
        return "the %s series%s: %s, stops at its patch %d, %s (conflict " \
            "in %s)" % (self.base.name, away, done, self.through + 1, name,
                        ", ".join(files) or "git am failed")


def choose(manifest, out_root, found, onto_entry, also):
    """The Manifest of the base whose series gets furthest onto REF (see
    the module's text); prints how far each got."""
    near = distances(manifest, found)
    if len(manifest.doc["bases"]) == 1:
        return manifest     # nothing to choose from
    os.makedirs(out_root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".rebase-try-", dir=out_root)
    trials = []
    try:
        onto_repo = os.path.join(scratch, "onto")
        bare = Manifest(dict(manifest.data, series=[], upstream=dict(
            manifest.upstream, commit=found["commit"], tree=found["tree"])),
            manifest.root, manifest.path)
        start = _build(bare, onto_entry, onto_repo)["base"]
        for i, data in enumerate(manifest.doc["bases"]):
            base = validate(manifest.doc, manifest.root, base=data["name"])
            trial = Trial(base, i, near.get(base.name))
            try:
                _try(trial, found, onto_repo, start,
                     os.path.join(scratch, "old-%d" % i), also)
            except UvPatchError as e:
                console.note("rebase: cannot try the %s series: %s"
                             % (base.name, e.message.splitlines()[0]))
                continue
            trials.append(trial)
            console.note("rebase: " + trial.describe(found["label"]))
    finally:
        remove_tree(scratch)
    if not trials:
        console.note("rebase: no series could be tried; starting from base %s"
                     % manifest.name)
        return manifest
    best = max(trials, key=Trial.rank)
    equals = [t for t in trials if t.rank()[:2] == best.rank()[:2]]
    if best.stop is None:
        why = "its series applies whole"
    else:
        why = "its series gets furthest (%d of %d patches)" % (
            best.through, len(best.base.series))
    if len(equals) > 1:
        why += ", as %d do, and it is the nearest to %s (%s)" % (
            len(equals), found["label"],
            ", ".join("%s: %d commits" % kv for kv in near.items())
            or "no history to measure: deps.json's order")
    console.note("rebase: starting from base %s: %s" % (best.base.name, why))
    return best.base


def _try(trial, found, repo, start, old, also):
    """Applies ``trial.base``'s series onto ``start`` in ``repo``."""
    base = trial.base
    entry = fetch_base(base, also)
    _build(base, entry, old, quiet=True)
    declare_shallow(repo, start)
    subproc.git(["fetch", "-q", "--no-tags", "--update-shallow", "--", old,
                 "+HEAD:refs/uvpatch-try/head"], cwd=repo)
    subproc.git(["reset", "-q", "--hard", start], cwd=repo)
    subproc.git(["clean", "-q", "-f", "-d", "-x"], cwd=repo)
    upstream = already_upstream(base, found)
    for e in base.series:
        if e["file"] in upstream:
            trial.dropped += 1
            continue
        before = head(repo)
        res = subproc.git(["am", "-q", "-3", "--committer-date-is-author-date",
                           "--", base.patch_path(e)], cwd=repo,
                          env=AM_IDENTITY, check=False)
        if res.returncode != 0:
            files = subproc.git_out(["diff", "--name-only", "--diff-filter=U"],
                                    cwd=repo).split()
            subproc.git(["am", "--abort"], cwd=repo, check=False)
            trial.stop = (e["file"], sorted(set(files)))
            return
        if head(repo) == before:
            trial.dropped += 1
        else:
            trial.applied += 1

