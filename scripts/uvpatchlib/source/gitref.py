"""Naming an upstream commit: a REF (tag, branch or commit id) resolved
in a git source (a local repository, a bundle or a URL). A local
repository is asked through a copy of its refs in a repository of the
tool's own (copy_refs, the one fetch made here); fetch.py brings in the
commits and trees the tool then uses.

Used by `rebase --onto` and `upstream --onto`, so both accept the same
REFs and fail the same way.
"""

import os
import re
import tempfile

from .. import subproc
from ..errors import UvPatchError, EXIT_FETCH
from .extract import NotARegularFile, source_kind
from ..fsutil import remove_tree

_HEX = re.compile(r"^[0-9a-f]{4,40}$")


class Resolved:
    """A REF found in a source: the commit and a label for deps.json."""

    def __init__(self, commit, label):
        self.commit = commit
        self.label = label


def default_source(manifest):
    """The git source of deps.json, when there is one."""
    spec = manifest.source("git")
    return spec["url"] if spec else None


def check_local(src):
    """Refuses a local source that is neither a regular file nor a
    folder: a FIFO would block git and this tool, /dev/zero never end."""
    try:
        source_kind(src)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except NotARegularFile as e:
        raise UvPatchError("source %s %s" % (src, e),
                           hint="give a git repository or bundle, a tarball "
                                "or a folder", status=EXIT_FETCH)


def is_git_source(src):
    """A local repository or bundle, or a URL git can fetch from."""
    check_local(src)
    if os.path.isdir(src):
        return (os.path.isdir(os.path.join(src, ".git"))
                or os.path.isfile(os.path.join(src, "HEAD"))
                and os.path.isdir(os.path.join(src, "objects")))
    if os.path.isfile(src):
        with open(src, "rb") as f:
            return f.read(16).startswith((b"# v2 git bundle",
                                          b"# v3 git bundle"))
    return "://" in src or re.match(r"^[\w.-]+@[\w.-]+:", src) is not None


def copy_refs(repo, src):
    """Fetches every branch and tag of the local repository or bundle
    ``src`` into ``repo``, a repository of the tool's own. git runs in
    ``repo``: a user's repository is only read, as a remote, so the
    commands its config names (core.fsmonitor, hooks) never run."""
    url = src if os.path.isfile(src) else "file://" + os.path.abspath(src)
    res = subproc.git(["fetch", "-q", "--", url, "+refs/heads/*:refs/heads/*",
                       "+refs/tags/*:refs/tags/*"], cwd=repo, check=False)
    if res.returncode != 0:
        raise UvPatchError("cannot read git source %s: %s"
                           % (src, res.stderr.strip()),
                           hint="pass --source with a readable git "
                                "repository or bundle", status=EXIT_FETCH)


def resolve_own(repo, ref):
    """The commit ``ref`` names in ``repo``, a repository the tool made
    (see copy_refs), or None."""
    res = subproc.git(["rev-parse", "-q", "--verify", ref + "^{commit}"],
                      cwd=repo, check=False)
    if res.returncode != 0:
        return None
    commit = res.stdout.strip()
    return Resolved(commit, _label(repo, ref, commit))


def resolve(src, ref):
    """The commit ``ref`` names in ``src``; UvPatchError when none."""
    check_local(src)
    if os.path.isdir(src):
        # A local repository answers any revision git understands; it is
        # asked through a copy of its refs (see copy_refs).
        scratch = tempfile.mkdtemp(prefix="uvpatch-resolve-")
        try:
            subproc.git(["init", "-q", "--bare", "--", scratch])
            copy_refs(scratch, src)
            found = resolve_own(scratch, ref)
        finally:
            remove_tree(scratch)
        if found:
            return found
    listed = _ls_remote(src)
    for name in ("refs/tags/%s^{}" % ref, "refs/tags/" + ref,
                 "refs/heads/" + ref, ref):
        if name in listed:
            label = ref if name.startswith("refs/tags/") else \
                ref + "@" + listed[name][:12]
            return Resolved(listed[name], label)
    if re.match(r"^[0-9a-f]{40}$", ref):
        # A remote does not list every commit: trust the id for now, the
        # fetch that follows verifies it.
        return Resolved(ref, ref[:12])
    if _HEX.match(ref):
        hits = sorted({c for c in listed.values() if c.startswith(ref)})
        if len(hits) == 1:
            return Resolved(hits[0], ref)
    raise UvPatchError(
        "%s: no commit, branch or tag %r" % (display(src), ref),
        hint="give a tag (v1.50.0), a branch or a full 40-digit commit id "
             "that exists there, or pass --source with a repository that "
             "has it", status=EXIT_FETCH)


def _ls_remote(src):
    url = "file://" + os.path.abspath(src) if os.path.isdir(src) else src
    res = subproc.git(["ls-remote", "--", url], check=False)
    if res.returncode != 0:
        first = (res.stderr or "").strip().splitlines()
        raise UvPatchError(
            "cannot read git source %s: %s"
            % (display(src), first[0] if first else
               "git ls-remote failed (status %d)" % res.returncode),
            hint="pass --source with a reachable git repository or bundle",
            status=EXIT_FETCH)
    found = {}
    for line in res.stdout.splitlines():
        commit, _, name = line.partition("\t")
        found[name] = commit
    return found


def _label(repo, ref, commit):
    """A tag name when the commit has one, else REF@commit."""
    res = subproc.git(["describe", "--tags", "--exact-match", commit],
                      cwd=repo, check=False)
    if res.returncode == 0 and res.stdout.strip():
        return res.stdout.strip()
    if _HEX.match(ref) and commit.startswith(ref):
        return commit[:12]
    return "%s@%s" % (ref, commit[:12])


def display(src):
    """A source as messages name it: a URL whole, a local one by name."""
    return src if "://" in src else os.path.basename(os.path.abspath(src))
