"""Fetching: every upstream tree and commit the tool uses comes in here.

The pinned tree of a base (Fetcher), verified, through a local cache.
Sources are tried in order: --source, the cache, UVPATCH_SOURCE (a
mirror, bundle or tarball: used when it holds the base), the upstream git
URL, the upstream archive, Debian's source package. Whatever a source
yields is checked by recomputing its git tree id (and, for a known
tarball, its sha256) before it enters the cache.

A REF that no base pins yet (fetch_ref, for `rebase --onto`), and one
commit into a repository of the tool's own (fetch_commit, for `upstream
--onto`). gitref.py names the commits.
"""

import json
import os
import re
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FETCH
from .extract import (MAX_TOTAL, NOT_A_SOURCE, NotARegularFile, copy_tree,
                      extract_tarball, open_regular, source_kind,
                      tree_problem, write_failed)
from ..fsutil import (Lock, no_space, out_of_space, remove_tree, sha256_file,
                      write_atomic)
from . import gitref
from .cache import CacheEntry, cache_root
from .gittree import tree_id

NETWORK_TIMEOUT = 60


class Unavailable(Exception):
    """A source that could not be reached: say so and try the next."""


def env_source():
    """UVPATCH_SOURCE, read here only: a git mirror or bundle, a tarball or
    a directory that serves every base it holds; None when unset."""
    return os.environ.get("UVPATCH_SOURCE") or None


def _short(oid):
    return oid[:7]


class Fetcher:
    def __init__(self, manifest, cache=None):
        self.manifest = manifest
        self.cache = cache or cache_root()
        self.entry_path = os.path.join(self.cache, manifest.tree)

    # The verified entry, from wherever it can be had.
    def fetch(self, source=None, also=(), label=None):
        """``source`` must serve this tree; ``also`` (local sources, such
        as rebase's --source) are tried after the cache, before
        UVPATCH_SOURCE, and may lack it. ``label`` names ``source`` in
        messages when the user did not pass it as --source."""
        # The cache is shared by every out/: one fetch at a time (the lock
        # is ~/.cache/uvpatch.lock, beside it). Scratch folders seen under
        # the lock were left by a killed run.
        os.makedirs(self.cache, exist_ok=True)
        with Lock(os.path.dirname(os.path.abspath(self.cache)), "fetch",
                  wait=True, name="uvpatch.lock"):
            for name in os.listdir(self.cache):
                if name.startswith(".tmp-"):
                    try:
                        remove_tree(os.path.join(self.cache, name))
                    except OSError as e:
                        # Not in the way: the fetch makes its own.
                        console.note("cannot remove %s, left by an "
                                     "interrupted fetch: %s" % (name, e))
            return self._fetch(source, also, label)

    def _fetch(self, source, also=(), label=None):
        tried = []
        if source:
            # A source named for this command must be right: a mismatch
            # is an error, not a reason to quietly use something else.
            label = label or "--source %s" % source
            try:
                return self._install(
                    lambda tmp: self._from_local(source, tmp), label)
            except Unavailable as e:
                raise UvPatchError(
                    "%s: %s" % (label, e),
                    hint="pass a git repository or bundle holding commit "
                         "%s, a directory or a tarball of tree %s"
                         % (self.manifest.commit, self.manifest.tree),
                    status=EXIT_FETCH)

        cached = self._cached()
        if cached:
            return cached
        tried.append("the cache (%s): empty" % self.entry_path)

        # UVPATCH_SOURCE serves every base it holds (a bundle of upstream
        # holds them all); for one it lacks, the next source is tried. A
        # source that holds the commit with another tree is still refused.
        mirror = env_source()
        extra = [("--source %s" % src, src) for src in also]
        if mirror:
            extra.append(("UVPATCH_SOURCE %s" % mirror, mirror))
        for label, path in extra:
            try:
                return self._install(
                    lambda tmp: self._from_local(path, tmp), label)
            except Unavailable as e:
                console.note("%s: %s" % (label, e))
                tried.append("%s: %s" % (label, e))

        attempts = [
            ("git", self._from_git_url),
            ("archive", self._from_archive),
            ("debian", self._from_debian),
        ]
        for kind, method in attempts:
            spec = self.manifest.source(kind)
            if spec is None:
                continue
            label = describe_source(spec)
            try:
                return self._install(lambda tmp: method(spec, tmp), label)
            except Unavailable as e:
                console.note("%s: %s" % (label, e))
                tried.append("%s: %s" % (label, e))
            except UvPatchError as e:
                if getattr(e, "full_disk", False):
                    raise
                console.note("%s: refused: %s" % (label, e.message))
                tried.append("%s: refused: %s" % (label, e.message))
        raise UvPatchError(
            "could not obtain libuv tree %s; tried:\n  %s"
            % (self.manifest.tree, "\n  ".join(tried)),
            hint=_enable_hints(self.manifest), status=EXIT_FETCH)

    def _cached(self):
        if not os.path.isdir(self.entry_path):
            return None
        problem = None
        try:
            entry = CacheEntry(self.entry_path)
            # A .git or a link in it would pass the tree id (a top-level
            # .git is not hashed) and then break every apply.
            odd = tree_problem(entry.tree_dir)
            actual = None if odd else tree_id(entry.tree_dir)
            if odd:
                problem = "is damaged (%s)" % odd
            elif actual != self.manifest.tree:
                problem = "holds tree %s" % actual
            elif entry.repo and _commit_tree(entry.repo,
                                             self.manifest.commit) \
                    != self.manifest.tree:
                problem = "its upstream commit does not match"
        except (OSError, ValueError, UvPatchError, NotARegularFile) as e:
            problem = "unreadable (%s)" % (getattr(e, "message", None)
                                           or e)
        if problem:
            console.note("cache entry %s %s, expected %s: removed"
                         % (self.entry_path, problem, self.manifest.tree))
            remove_tree(self.entry_path)
            return None
        console.note("verified tree %s (cache)" % _short(self.manifest.tree))
        return entry

    def _install(self, produce, label):
        """Runs ``produce(tmp)`` in a scratch folder of the cache, checks
        what it made and moves it into place as one rename."""
        os.makedirs(self.cache, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=self.cache)
        try:
            try:
                info = produce(tmp)
            except (Unavailable, UvPatchError, OSError) as e:
                # A full cache disk is not the source's fault, and the
                # next source would fill it all the same.
                if out_of_space(self.cache):
                    raise no_space(self.cache, "fetching from %s" % label,
                                   (getattr(e, "message", None) or str(e))
                                   .split("\n")[0][:200], EXIT_FETCH)
                raise
            odd = tree_problem(os.path.join(tmp, "tree"))
            if odd:
                raise UvPatchError("%s: %s" % (label, odd),
                                   hint=NOT_A_SOURCE, status=EXIT_FETCH)
            actual = tree_id(os.path.join(tmp, "tree"))
            if actual != self.manifest.tree:
                raise UvPatchError(
                    "%s holds the wrong tree: expected %s, actual %s"
                    % (label, self.manifest.tree, actual),
                    hint="use a source of libuv %s (commit %s)"
                         % (self.manifest.upstream["tag"],
                            self.manifest.commit), status=EXIT_FETCH)
            info["tree"] = actual
            write_atomic(os.path.join(tmp, "source.json"),
                         json.dumps(info, indent=2) + "\n")
            remove_tree(self.entry_path)
            os.rename(tmp, self.entry_path)
        finally:
            remove_tree(tmp)
        console.note("verified tree %s (%s)" % (_short(self.manifest.tree),
                                                 label))
        return CacheEntry(self.entry_path)

    # Sources.
    def _from_local(self, src, tmp):
        try:
            # Only these are read: a FIFO or /dev/zero would never end.
            kind = source_kind(src)
        except FileNotFoundError:
            raise Unavailable("does not exist")
        except NotARegularFile as e:
            raise Unavailable(str(e))
        if kind == "dir":
            if _is_git_repo(src):
                try:
                    return self._from_git(src, tmp)
                except Unavailable as e:
                    if not os.path.isdir(os.path.join(src, ".git")):
                        raise
                    console.note("%s: %s; using its work tree" % (src, e))
                    remove_tree(os.path.join(tmp, "upstream.git"))
            copy_tree(src, os.path.join(tmp, "tree"), skip_top_git=True)
            return {"source": "directory", "path": os.path.abspath(src)}
        try:
            with open_regular(src) as f:
                head = f.read(16)
        except NotARegularFile as e:
            raise Unavailable(str(e))
        if head.startswith(b"# v2 git bundle") or \
                head.startswith(b"# v3 git bundle"):
            return self._from_git(os.path.abspath(src), tmp)
        if tarfile.is_tarfile(src):
            return self._from_tarball(src, tmp, None)
        raise Unavailable("is neither a git repository or bundle, a "
                          "directory nor a tarball")

    def _from_git_url(self, spec, tmp):
        return self._from_git(spec["url"], tmp)

    def _from_git(self, url, tmp):
        repo = os.path.join(tmp, "upstream.git")
        commit = self.manifest.commit
        url = _url(url)
        subproc.git(["init", "-q", "--bare", "--", repo])
        # Only the pinned commit is kept: a whole history does not belong
        # in the cache.
        why = _fetch_commit(repo, url, commit, depth=1,
                            keep="refs/tags/upstream")
        if why:
            raise Unavailable(_first_line(why))
        actual = _commit_tree(repo, commit)
        if actual != self.manifest.tree:
            raise UvPatchError(
                "commit %s of %s has tree %s, expected %s"
                % (commit, url, actual, self.manifest.tree),
                hint="the source is not upstream libuv; use another",
                status=EXIT_FETCH)
        _checkout(repo, commit, os.path.join(tmp, "tree"))
        return {"source": "git", "url": url, "commit": commit}

    def _from_archive(self, spec, tmp):
        path = os.path.join(tmp, spec["file"])
        console.note("downloading %s" % spec["url"])
        try:
            with _open_url(spec["url"]) as r, open(path, "wb") as f:
                got = 0
                while True:
                    chunk = r.read(1 << 20)
                    if not chunk:
                        break
                    got += len(chunk)
                    # /dev/zero, or a server that never stops.
                    if got > MAX_TOTAL:
                        raise Unavailable("is larger than %d MiB, which no "
                                          "libuv tarball is"
                                          % (MAX_TOTAL >> 20))
                    try:
                        f.write(chunk)
                    except OSError as e:
                        # The disk's fault, not the download's.
                        write_failed(path, e)
        except NotARegularFile as e:
            raise Unavailable(str(e))
        except OSError as e:
            raise Unavailable("cannot download: %s" % e)
        return self._from_tarball(path, tmp, spec)

    def _from_debian(self, spec, tmp):
        if shutil.which("apt-get") is None:
            raise Unavailable("apt-get not found")
        work = os.path.join(tmp, "apt")
        os.makedirs(work)
        res = subproc.run(["apt-get", "source", "--download-only",
                           "-q", "--", "%s=%s" % (spec["package"],
                                                  spec["version"])],
                          cwd=work, capture=True, check=False)
        path = os.path.join(work, spec["file"])
        if res.returncode != 0 or not os.path.isfile(path):
            lines = [ln for ln in (res.stderr or "").splitlines()
                     if ln.startswith("E:")]
            raise Unavailable(
                (lines[0] if lines else "apt-get source failed (status %d)"
                 % res.returncode) + " (needs a deb-src entry for %s)"
                % spec["suite"])
        return self._from_tarball(path, tmp, spec)

    def _from_tarball(self, path, tmp, spec):
        try:
            with open_regular(path) as f:
                digest = sha256_file(f)
        except NotARegularFile as e:
            raise Unavailable(str(e))
        known = spec
        if known is None:
            name = os.path.basename(path)
            for src in self.manifest.sources:
                if src.get("file") == name or src.get("sha256") == digest:
                    known = src
        if known is not None and digest != known["sha256"]:
            raise UvPatchError(
                "tarball %s: sha256 mismatch: expected %s, actual %s"
                % (path, known["sha256"], digest),
                hint="the file is damaged or not the published one; "
                     "download it again", status=EXIT_FETCH)
        if known is None:
            console.note("%s is not a tarball named in deps.json: verified by "
                         "tree id only" % path)
        extract = os.path.join(tmp, "extract")
        extract_tarball(path, extract)
        os.rename(_extracted_tree(extract), os.path.join(tmp, "tree"))
        remove_tree(extract)
        return {"source": "tarball", "file": os.path.basename(path),
                "sha256": digest}


def _extracted_tree(extract):
    """The tree in the folder a tarball was extracted to: its one top
    folder (libuv-1.50.0/), or the folder itself."""
    entries = os.listdir(extract)
    top = os.path.join(extract, entries[0]) if len(entries) == 1 else ""
    return top if top and os.path.isdir(top) else extract


def _open_url(url):
    """The archive at ``url``, opened for reading. A file:// URL must name
    a regular file: urllib would open a FIFO and wait forever."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "file":
        return open_regular(urllib.request.url2pathname(parsed.path))
    return urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT)


def describe_source(spec):
    if spec["kind"] == "debian":
        return "Debian source package %s %s" % (spec["package"],
                                                spec["version"])
    return "%s %s" % (spec["kind"], spec["url"])


def _enable_hints(manifest):
    hints = ["pass --source with a local git repository, bundle, "
             "directory or tarball of %s (or set UVPATCH_SOURCE to a "
             "bundle or mirror of upstream libuv)" % manifest.upstream["tag"]]
    deb = manifest.source("debian")
    if deb:
        hints.append(
            "for Debian's package: add a deb-src entry for suite %s (copy "
            "the Debian entry in /etc/apt/sources.list.d/ with "
            "'Types: deb-src' and 'Suites: %s'), run apt-get update"
            % (deb["suite"], deb["suite"]))
    return "; ".join(hints)


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _is_git_repo(path):
    return (os.path.isdir(os.path.join(path, ".git"))
            or os.path.isfile(os.path.join(path, "HEAD"))
            and os.path.isdir(os.path.join(path, "objects")))


def _commit_tree(repo, commit):
    res = subproc.git(["rev-parse", "--verify", "-q", commit + "^{tree}"],
                      cwd=repo, check=False)
    return res.stdout.strip() if res.returncode == 0 else None


def _checkout(repo, commit, dest):
    """Writes the files of ``commit`` to ``dest`` without conversions."""
    os.makedirs(dest)
    index = os.path.join(os.path.dirname(dest), "checkout.index")
    env = {"GIT_INDEX_FILE": index, "GIT_WORK_TREE": dest}
    subproc.git(["read-tree", commit], cwd=repo, env=env)
    subproc.git(["checkout-index", "-a", "-f"], cwd=repo, env=env)
    os.unlink(index)


# One commit, into a repository of the tool's own.

_FETCHED = "refs/uvpatch-source/"   # a bundle's refs, while it is read


def _url(src):
    """What git fetches from: a local folder as a file:// URL."""
    return "file://" + os.path.abspath(src) if os.path.isdir(src) else src


def _fetch_commit(repo, src, commit, depth=None, keep=None):
    """Brings ``commit`` from the git source ``src`` (a repository, a
    bundle or a URL) into ``repo``, under the ref ``keep`` when given.
    Returns "" when it is there, else what went wrong."""
    cmd = ["fetch", "-q", "--no-tags"]
    if os.path.isfile(src):
        # A bundle carries refs, not arbitrary commits: take them all.
        cmd += ["--", src, "+refs/*:%s*" % _FETCHED]
    else:
        if depth:
            cmd += ["--depth", str(depth)]
        # "--": a URL is never an option (--upload-pack=...).
        cmd += ["--", _url(src), commit]
    res = subproc.git(cmd, cwd=repo, check=False)
    why = ""
    if res.returncode != 0:
        why = (res.stderr or "").strip() or \
            "git fetch failed (status %d)" % res.returncode
    elif subproc.git(["cat-file", "-e", commit + "^{commit}"], cwd=repo,
                     check=False).returncode != 0:
        why = "does not contain commit %s" % commit
    elif keep:
        subproc.git(["update-ref", keep, commit], cwd=repo)
    subproc.delete_refs(_FETCHED, repo)
    return why


def fetch_commit(repo, src, commit, depth=None, keep=None):
    """Brings ``commit`` from ``src`` into the repository ``repo``;
    UvPatchError when it cannot."""
    why = _fetch_commit(repo, src, commit, depth=depth, keep=keep)
    if why:
        raise UvPatchError(
            "cannot fetch commit %s from %s: %s"
            % (commit, gitref.display(src), why),
            hint="check the commit id, or pass --source with a repository "
                 "that has it", status=EXIT_FETCH)


# A REF no base pins yet: where `rebase --onto` goes.

_COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")


def fetch_ref(manifest, out_root, ref, source):
    """Finds REF in ``source`` (else UVPATCH_SOURCE, else deps.json's git
    source) and brings it into a scratch folder in ``out_root``. Returns
    {commit, label, tree, fetch_from, tarball, repo, shown} and the scratch
    folder, to remove afterwards: ``fetch_from`` serves REF's tree to a
    Fetcher; ``repo`` is a repository with REF's history when the source
    has it (None otherwise)."""
    src = source or env_source() or gitref.default_source(manifest)
    if src is None:
        raise UvPatchError("deps.json has no git source to find %r in" % ref,
                           hint="pass --source with a git repository, a "
                                "bundle or a tarball", status=EXIT_FETCH)
    if source and not os.path.exists(source) and "://" not in source:
        raise UvPatchError("--source %s does not exist" % source,
                           hint="give a git repository, a bundle, a tarball "
                                "or a directory", status=EXIT_FETCH)
    os.makedirs(out_root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".fetch-ref-", dir=out_root)
    try:
        if gitref.is_git_source(src):
            found = _ref_from_git(src, ref, scratch)
        else:
            commit, tree = _ref_from_tarball(manifest, src, ref, scratch)
            found = {"commit": commit, "label": ref, "tree": tree,
                     "fetch_from": os.path.abspath(src), "tarball": src,
                     "repo": None}
    except BaseException:
        remove_tree(scratch)
        raise
    # The scratch folder is ours: messages name what the user gave.
    found["shown"] = "%s from %s" % (ref, gitref.display(src))
    return found, scratch


def _ref_from_git(src, ref, scratch):
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
        fetch_commit(scratch, src, found.commit, depth=1)
    # A ref makes the commit fetchable from here by its id.
    subproc.git(["update-ref", "refs/tags/upstream", found.commit],
                cwd=scratch)
    tree = subproc.git_out(["rev-parse", found.commit + "^{tree}"],
                           cwd=scratch)
    label = found.label
    if local and not subproc.git(["describe", "--tags", "--exact-match",
                                  found.commit], cwd=scratch,
                                 check=False).stdout.strip():
        described = subproc.git(["describe", "--tags", "--exclude",
                                 "upstream", found.commit], cwd=scratch,
                                check=False)
        if described.returncode == 0 and described.stdout.strip():
            label = described.stdout.strip()
    return {"commit": found.commit, "label": label, "tree": tree,
            "fetch_from": scratch, "tarball": None,
            "repo": scratch if local else None}


def _ref_from_tarball(manifest, src, ref, scratch):
    """A tarball or directory: (commit, tree). Its tree id is computed;
    the upstream commit comes from the header `git archive` writes, or
    from REF in UVPATCH_SOURCE or deps.json's git source."""
    if os.path.isdir(src):
        tree = tree_id(src)
        commit = None
    elif tarfile.is_tarfile(src):
        extract = os.path.join(scratch, "extract")
        commit = extract_tarball(src, extract)
        tree = tree_id(_extracted_tree(extract))
        if commit and not _COMMIT_ID.match(commit):
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
    mirror = env_source()
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
    console.note("%s: upstream commit %s is %r in the git source (the "
                 "tarball is verified by its tree id only)"
                 % (os.path.basename(src), commit[:12], ref))
    return commit, tree
