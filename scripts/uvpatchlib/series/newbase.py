"""Where a rebase goes: REF found in a git repository or bundle, a
tarball or a directory, and the deps.json entry of the base it becomes.
"""

import copy
import os
import re
import tarfile
import tempfile

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FETCH
from ..source import gitref
from ..source.extract import extract_tarball
from ..fsutil import remove_tree, sha256_file
from ..source.gittree import tree_id

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)+)$")


def locate(manifest, out_root, ref, source):
    """Finds REF: {commit, label, tree, fetch_from, tarball, repo}, where
    ``repo`` is a repository with REF's history when the source has it;
    and a scratch folder to remove afterwards."""
    src = source or gitref.env_source() or gitref.default_source(manifest)
    if src is None:
        raise UvPatchError("deps.json has no git source to find %r in" % ref,
                           hint="pass --source with a git repository, a "
                                "bundle or a tarball", status=EXIT_FETCH)
    if source and not os.path.exists(source) and "://" not in source:
        raise UvPatchError("--source %s does not exist" % source,
                           hint="give a git repository, a bundle, a tarball "
                                "or a directory", status=EXIT_FETCH)
    os.makedirs(out_root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".rebase-fetch-", dir=out_root)
    try:
        if gitref.is_git_source(src):
            found = _from_git(src, ref, scratch)
        else:
            commit, tree = _from_tarball(manifest, src, ref, scratch)
            found = {"commit": commit, "label": ref, "tree": tree,
                     "fetch_from": os.path.abspath(src), "tarball": src,
                     "repo": None}
    except BaseException:
        remove_tree(scratch)
        raise
    return found, scratch


def _from_git(src, ref, scratch):
    """Finds REF and brings its commit into a bare repository in
    ``scratch``, which then serves as the source to fetch from. A local
    repository or a bundle brings its whole history, so that distances
    to the bases and upstream's own commits can be looked up."""
    subproc.git(["init", "-q", "--bare", "--", scratch])
    local = os.path.exists(src)
    if local:
        gitref.copy_refs(scratch, src)
        found = gitref.resolve_own(scratch, ref) or gitref.resolve(scratch,
                                                                   ref)
    else:
        found = gitref.resolve(src, ref)
        gitref.fetch_commit(scratch, src, found.commit, depth=1)
    # A ref makes the commit fetchable from here by its id.
    subproc.git(["update-ref", "refs/tags/upstream", found.commit],
                cwd=scratch)
    tree = subproc.git_out(["rev-parse", found.commit + "^{tree}"],
                           cwd=scratch)
    label = found.label
    if local and not subproc.git(["describe", "--tags", "--exact-match",
                                  found.commit], cwd=scratch,
                                 check=False).stdout.strip():
        described = subproc.git(["describe", "--tags", "--exclude", "upstream",
                                 found.commit], cwd=scratch, check=False)
        if described.returncode == 0 and described.stdout.strip():
            label = described.stdout.strip()
    return {"commit": found.commit, "label": label, "tree": tree,
            "fetch_from": scratch, "tarball": None,
            "repo": scratch if local else None}


def base_entry(manifest, found, name):
    """deps.json's object for the new base, and notes to show."""
    label = found["label"]
    onto = copy.deepcopy(manifest.data)
    onto["name"] = name or re.sub(r"[^A-Za-z0-9._+-]", "-", label)
    if onto["name"] != manifest.name:
        # A new base says what it is for, and CI takes it up, by hand.
        onto.pop("for", None)
        onto.pop("ci", None)
    onto["upstream"].update(tag=label, commit=found["commit"],
                            tree=found["tree"])
    onto["sources"], notes = _sources(manifest, label, found["tarball"])
    return onto, notes


def _from_tarball(manifest, src, ref, scratch):
    """A tarball or directory: its tree id is computed; the upstream
    commit comes from the header `git archive` writes, or from REF in
    deps.json's git source."""
    if os.path.isdir(src):
        tree = tree_id(src)
        commit = None
    elif tarfile.is_tarfile(src):
        extract = os.path.join(scratch, "extract")
        commit = extract_tarball(src, extract)
        names = os.listdir(extract)
        top = os.path.join(extract, names[0]) if len(names) == 1 else ""
        tree = tree_id(top if top and os.path.isdir(top) else extract)
        if commit and not re.match(r"^[0-9a-f]{40}$", commit):
            commit = None
    else:
        raise UvPatchError("--source %s is neither a git repository or "
                           "bundle, a tarball nor a directory" % src,
                           hint="give one of those", status=EXIT_FETCH)
    if commit:
        console.note("%s: upstream commit %s from its git archive header"
                     % (os.path.basename(src), commit[:12]))
        return commit, tree
    # Offline, UVPATCH_SOURCE (a bundle of upstream) knows REF too.
    mirror = gitref.env_source()
    url = mirror if mirror and os.path.exists(mirror) and \
        gitref.is_git_source(mirror) else gitref.default_source(manifest)
    try:
        if url is None:
            raise UvPatchError("no git source")
        commit = gitref.resolve(url, ref).commit
    except UvPatchError as e:
        raise UvPatchError(
            "%s does not say which upstream commit it is, and %r could not "
            "be looked up in %s (%s)"
            % (os.path.basename(src), ref, "UVPATCH_SOURCE" if url == mirror
               else "deps.json's git source", e.message),
            hint="use a tarball made by `git archive` (GitHub's are), or a "
                 "git repository or bundle as --source", status=EXIT_FETCH)
    console.note("%s: upstream commit %s is %r in the git source (the tarball "
                 "is verified by its tree id only)"
                 % (os.path.basename(src), commit[:12], ref))
    return commit, tree


def _sources(manifest, label, tarball):
    """The sources for the new base. A tarball entry is kept only when
    the tarball given as --source is the one it names (its sha256 is then
    known); the others cannot be verified here and are dropped."""
    old = _VERSION.match(manifest.upstream["tag"])
    new = _VERSION.match(label)
    kept, notes = [], []
    for i, spec in enumerate(manifest.sources):
        if spec["kind"] == "git":
            kept.append(dict(spec))
            continue
        what = "sources[%d] (%s %s)" % (i, spec["kind"], spec["file"])
        if old and new and spec["kind"] == "archive":
            moved = {k: spec[k].replace(old.group(1), new.group(1))
                     for k in ("url", "file")}
            if tarball and os.path.basename(tarball) == moved["file"]:
                kept.append(dict(spec, sha256=sha256_file(tarball),
                                 **moved))
                notes.append("%s: now %s, sha256 of the given tarball"
                             % (what, moved["file"]))
                continue
        if new and tarball and spec["kind"] == "debian" and \
                os.path.basename(tarball) == "%s_%s.orig.tar.gz" % (
                    spec["package"], new.group(1)):
            # The right file, but Debian's revision and suite are not in
            # it: they cannot be made up.
            notes.append("dropped %s: %s is its orig tarball for %s "
                         "(sha256 %s), but Debian's version and suite for "
                         "it are unknown here; add the entry back by hand"
                         % (what, os.path.basename(tarball), label,
                            sha256_file(tarball)))
            continue
        notes.append("dropped %s: its sha256 is for %s and the tarball of "
                     "%s was not given to verify; add it back by hand once "
                     "checked" % (what, manifest.upstream["tag"], label))
    return kept, notes
