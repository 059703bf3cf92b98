"""Building out/<base>/src: the pristine tree as a base commit, one commit
a patch.

The work happens in out/<base>/.src.new and is renamed into place only when the
whole series applied, so a failure or a crash leaves the previous tree.
"""

import json
import os
import re
import subprocess

from .. import console, subproc
from ..errors import UvPatchError, EXIT_APPLY, EXIT_STATE
from ..source.extract import copy_tree
from ..source.fetch import Fetcher
from ..fsutil import (no_space, out_of_space, remove_tree, replace_dir,
                      recover_dir, scratch_index, write_atomic)
from .patchfile import Patch, hunk_ranges_of_diff, unusable

STATE_FILE = "uvpatch-state.json"
BASE_TAG = "uvpatch-base"
BRANCH = "series"

# A fixed identity and date for the base commit made from a tarball, so
# its id is the same on every machine.
BASE_IDENTITY = {
    "GIT_AUTHOR_NAME": "libuv upstream",
    "GIT_AUTHOR_EMAIL": "upstream@libuv.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "libuv upstream",
    "GIT_COMMITTER_EMAIL": "upstream@libuv.invalid",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
# git am takes the author from the patch; the committer is fixed.
AM_IDENTITY = {
    "GIT_COMMITTER_NAME": "uvpatch",
    "GIT_COMMITTER_EMAIL": "uvpatch@invalid",
}


def wanted_state(manifest):
    return {
        "tree": manifest.tree,
        "patches": [{"file": e["file"], "sha256": e["sha256"]}
                    for e in manifest.series],
    }


def read_state(src):
    try:
        with open(os.path.join(src, ".git", STATE_FILE),
                  encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _same_series(state, want):
    applied = [{"file": p["file"], "sha256": p["sha256"]}
               for p in state["patches"]]
    return state["tree"] == want["tree"] and applied == want["patches"]


def local_changes(src, state):
    """What out/<base>/src holds beyond the applied series: commits and
    edits."""
    changes = []
    head = subproc.git(["rev-parse", "-q", "--verify", "HEAD"], cwd=src,
                       check=False).stdout.strip()
    if state is None:
        return ["%s was not made by `scripts/uvpatch apply`"
                % console.shown(src)]
    if head != state["head"]:
        log = subproc.git(["log", "--oneline", "%s..HEAD" % state["head"]],
                          cwd=src, check=False).stdout.strip()
        changes.append("commits not in patches/: "
                       + (log.replace("\n", "; ") or "HEAD moved to "
                          + head[:12]))
    status = subproc.git_out(["status", "--porcelain"], cwd=src)
    if status:
        changes.append("uncommitted edits: "
                       + "; ".join(status.splitlines()[:10]))
    return changes


def apply_series(manifest, out, source=None, discard=False):
    """Makes out/<base>/src match deps.json; returns its path."""
    src = os.path.join(out, "src")
    recover_dir(src)
    state = read_state(src) if os.path.isdir(src) else None
    if os.path.isdir(src):
        changes = local_changes(src, state)
        if changes and not discard:
            raise UvPatchError(
                "%s has work that is not in patches/:\n  "
                % console.shown(src) + "\n  ".join(changes),
                hint="to keep it, run `scripts/uvpatch refresh%s` (it "
                     "rewrites patches/%s/ from the commits in %s); to "
                     "drop it, run `scripts/uvpatch apply%s --discard`"
                % (manifest.base_option, manifest.name, console.shown(src),
                   manifest.base_option),
                status=EXIT_STATE)
        if not changes and _same_series(state, wanted_state(manifest)):
            console.note("%s is up to date (%d patches)"
                         % (console.shown(src), len(manifest.series)))
            return src

    console.step("fetch")
    entry = Fetcher(manifest).fetch(source)
    console.step("apply")
    if not manifest.series:
        console.note("the series is empty: %s is the pristine tree"
                     % console.shown(src))
    work = os.path.join(out, ".src.new")
    remove_tree(work)
    try:
        try:
            state = _build(manifest, entry, work)
        except UvPatchError as e:
            # git says "could not write" or its exit status, not why.
            if out_of_space(out):
                raise no_space(out, "applying the series",
                               e.message.split("\n")[0][:200], e.status)
            raise
    except BaseException:
        remove_tree(work)
        raise
    write_atomic(os.path.join(work, ".git", STATE_FILE),
                 json.dumps(state, indent=2) + "\n")
    if os.path.isdir(src):
        _keep_mtimes(src, work)
    replace_dir(work, src)
    console.note("%s: %d patches on %s" % (console.shown(src),
                                           len(manifest.series),
                                           manifest.commit[:12]))
    return src


def _build(manifest, entry, work, quiet=False):
    os.makedirs(work)
    subproc.git(["init", "-q", "-b", BRANCH], cwd=work)
    if entry.repo:
        subproc.git(["fetch", "-q", "--no-tags", "--update-shallow", "--",
                     entry.repo, manifest.commit], cwd=work)
        subproc.git(["reset", "-q", "--hard", manifest.commit], cwd=work)
        # The cache may hold the pinned commit without its parents: say so,
        # or any later walk (format-patch, log) fails on the missing ones.
        declare_shallow(work, manifest.commit)
    else:
        _copy_tree(entry.tree_dir, work)
        subproc.git(["add", "-A", "-f"], cwd=work)
        subproc.git(["commit", "-q", "--no-verify", "-m",
                     "libuv %s\n\nPristine upstream tree %s (upstream commit "
                     "%s), imported from a tarball or directory by uvpatch."
                     % (manifest.upstream["tag"], manifest.tree,
                        manifest.commit)], cwd=work, env=BASE_IDENTITY)
    base = subproc.git_out(["rev-parse", "HEAD"], cwd=work)
    if subproc.git_out(["rev-parse", "HEAD^{tree}"],
                       cwd=work) != manifest.tree:
        raise UvPatchError("the base commit does not have tree %s"
                           % manifest.tree, status=EXIT_APPLY)
    subproc.git(["tag", BASE_TAG], cwd=work)
    applied = []
    for entry_ in manifest.series:
        path = manifest.patch_path(entry_)
        commit = _apply_one(work, path, entry_["file"])
        applied.append({"file": entry_["file"], "sha256": entry_["sha256"],
                        "commit": commit})
        if not quiet:
            console.note("applied %s" % entry_["file"])
    return {"tree": manifest.tree, "base": base, "patches": applied,
            "head": subproc.git_out(["rev-parse", "HEAD"], cwd=work)}


def declare_shallow(repo, commit):
    """Lists ``commit`` in the repository's shallow file when a parent of
    it is missing (the cache keeps only the pinned commit)."""
    # cat-file, not rev-list: that one walks into the missing parents.
    parents = [ln.split()[1] for ln in subproc.git_out(
        ["cat-file", "commit", commit], cwd=repo).split("\n\n")[0]
        .splitlines() if ln.startswith("parent ")]
    missing = [p for p in parents if subproc.git(
        ["cat-file", "-e", p + "^{commit}"], cwd=repo,
        check=False).returncode != 0]
    if not missing:
        return
    path = os.path.join(repo, subproc.git_out(
        ["rev-parse", "--git-path", "shallow"], cwd=repo))
    try:
        with open(path, encoding="utf-8") as f:
            known = f.read().split()
    except FileNotFoundError:
        known = []
    if commit not in known:
        write_atomic(path, "".join(c + "\n" for c in known + [commit]))


def _blobs(repo):
    """{path: blob id} of a repository's index."""
    res = subproc.git(["ls-files", "-s", "-z"], cwd=repo, check=False)
    found = {}
    for record in res.stdout.split("\0"):
        if record:
            meta, path = record.split("\t", 1)
            found[path] = meta.split()[1]
    return found


def _keep_mtimes(old, new):
    """Gives files whose content did not change their old times, so a
    rebuild after a change to one patch recompiles only what it touches."""
    before = _blobs(old)
    for path, blob in _blobs(new).items():
        if before.get(path) == blob:
            try:
                st = os.stat(os.path.join(old, path))
                os.utime(os.path.join(new, path),
                         ns=(st.st_atime_ns, st.st_mtime_ns))
            except OSError:
                pass  # a missing old file only costs a recompile


def _copy_tree(tree_dir, work):
    # Regular files and folders only, and the first error as itself (a
    # full disk is an OSError, not shutil.Error's list of every file).
    copy_tree(tree_dir, work, exist_ok=True)


def _apply_one(work, path, name):
    with open(path, encoding="utf-8", errors="surrogateescape",
              newline="") as f:
        text = f.read()
    patch = Patch(text)
    problem = unusable(text)
    if problem:
        raise UvPatchError("%s: %s" % (name, problem[0]), hint=problem[1],
                           status=EXIT_APPLY)
    res = subproc.git(["am", "-q", "--whitespace=error",
                       "--committer-date-is-author-date", "--", path],
                      cwd=work, env=AM_IDENTITY, check=False)
    if res.returncode != 0:
        detail = (res.stdout + res.stderr).strip()
        subproc.git(["am", "--abort"], cwd=work, check=False)
        if subproc.git(["apply", "--check", "--", path], cwd=work,
                       check=False).returncode == 0:
            # The diff fits: git am failed for another reason (a full
            # disk, permissions, a damaged mail header). Say that.
            raise UvPatchError(
                "%s: git am failed, though its diff applies:\n  %s"
                % (name, detail.replace("\n", "\n  ")),
                hint="fix the cause git names above and run the command "
                     "again", status=EXIT_APPLY)
        raise UvPatchError(_explain_failure(name, patch, detail),
                           hint="the patch must apply exactly (no fuzz, no "
                                "offset, no whitespace damage): rebase it "
                                "on the pinned tree, or run `scripts/uvpatch "
                                "rebase` when moving the base",
                           status=EXIT_APPLY)
    commit = subproc.git_out(["rev-parse", "HEAD"], cwd=work)
    _check_exact(work, commit, patch, name)
    return commit


def _explain_failure(name, patch, detail):
    lines = ["%s does not apply" % name]
    for m in re.finditer(r"patch failed: (.+):(\d+)", detail):
        file, line = m.group(1), int(m.group(2))
        hunk = patch.hunk_at(file, line)
        if hunk:
            lines.append("  %s: hunk #%d %s" % (file, hunk.number,
                                                hunk.header))
        else:
            lines.append("  %s: the hunk at line %d" % (file, line))
    for m in re.finditer(r"error: (.+): (does not exist in index|"
                         r"already exists in index|No such file.*)", detail):
        lines.append("  %s: %s" % (m.group(1), m.group(2)))
    if len(lines) == 1:
        lines.append("  git am said: " + detail.replace("\n", "\n    "))
    return "\n".join(lines)


def _check_exact(work, commit, patch, name):
    """git apply accepts a hunk found at another line (an offset); this
    series does not: the commit's hunks must be where the patch says."""
    diff = subproc.git_out(["diff-tree", "-p", "--no-color", "--no-renames",
                            "%s^" % commit, commit], cwd=work)
    got = hunk_ranges_of_diff("x\n\n" + diff)
    want = patch.hunk_ranges()
    if got == want:
        return
    for (gpath, grange), (wpath, wrange) in zip(got, want):
        if (gpath, grange) != (wpath, wrange):
            raise UvPatchError(
                "%s does not apply exactly: %s: hunk at line %d of the "
                "patch landed at line %d" % (name, wpath, wrange[0],
                                             grange[0]),
                hint="regenerate the patch against the pinned tree "
                     "(`scripts/uvpatch refresh`)", status=EXIT_APPLY)
    raise UvPatchError("%s does not apply exactly: its hunks differ from "
                       "what git records" % name,
                       hint="regenerate it with `scripts/uvpatch refresh`",
                       status=EXIT_APPLY)


def export_base(out):
    """out/<base>/base: the pristine tree, for the unpatched build.
    Rewritten only
    when the base changes, so a build of it stays a no-op."""
    src = os.path.join(out, "src")
    state = read_state(src)
    if state is None:
        raise UvPatchError("%s is missing" % console.shown(src),
                           hint="run `scripts/uvpatch apply` first",
                           status=EXIT_STATE)
    base = os.path.join(out, "base")
    recover_dir(base)
    stamp = os.path.join(out, "base.json")
    try:
        with open(stamp, encoding="utf-8") as f:
            if json.load(f).get("tree") == state["tree"] and \
                    os.path.isdir(base):
                return base
    except (OSError, ValueError):
        pass
    export_commit(src, BASE_TAG, base)
    write_atomic(stamp, json.dumps({"tree": state["tree"]}) + "\n")
    return base


def export_commit(src, commit, dest):
    """Writes the files of ``commit`` of the repository ``src`` to ``dest``
    (replacing it), through a scratch folder beside it."""
    work = dest + ".new"
    remove_tree(work)
    os.makedirs(work)
    index = scratch_index(dest + ".index")
    env = {"GIT_INDEX_FILE": os.path.abspath(index),
           "GIT_WORK_TREE": os.path.abspath(work)}
    try:
        subproc.git(["read-tree", commit], cwd=src, env=env)
        subproc.git(["checkout-index", "-a", "-f"], cwd=src, env=env)
    finally:
        remove_tree(index)
    replace_dir(work, dest)


# Where git's config scopes are, as a note names them.
_SCOPES = {"local": "the checkout's git config",
           "worktree": "the checkout's git config",
           "global": "your global git config",
           "system": "the system's git config"}
# What chooses the user's own config files; kept for the look-up alone.
_CONFIG_VARS = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                "GIT_CONFIG_NOSYSTEM", "HOME", "XDG_CONFIG_HOME")


def user_identity(checkout):
    """{"user.name": (value, where), "user.email": ...} as the user's git
    gives them in ``checkout``: its own config first, then the global
    one. Not subproc.git: that one hides the user's configuration."""
    env = subproc.git_environ()
    env.update({k: os.environ[k] for k in _CONFIG_VARS if k in os.environ})
    found = {}
    for key in ("user.name", "user.email"):
        try:
            res = subprocess.run(["git", "config", "--show-scope", "--get",
                                  key], cwd=checkout, env=env, text=True,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, check=False)
        except OSError:
            continue
        scope, _, value = res.stdout.rstrip("\n").partition("\t")
        if res.returncode == 0 and value.strip():
            found[key] = (value.strip(), _SCOPES.get(scope, scope))
    return found


def use_identity(checkout, src):
    """Sets the user's identity in out/<base>/src, a repository of its
    own, so the commits made there are theirs as the checkout's would
    be; returns the sentence that says whose, and from where."""
    found = user_identity(checkout)
    for key in ("user.name", "user.email"):
        if key in found:
            subproc.git(["config", key, found[key][0]], cwd=src)
        else:
            subproc.git(["config", "--unset-all", key], cwd=src,
                        check=False)
    shown = console.shown(src)
    if len(found) < 2:
        missing = [k for k in ("user.name", "user.email") if k not in found]
        return ("no %s in the checkout's or your global git config: "
                "commits in %s get git's guess; set them (git config "
                "--global user.name \"Your Name\"; git config --global "
                "user.email you@example.org) and run apply again"
                % (" or ".join(missing), shown))
    name, email = found["user.name"], found["user.email"]
    where = name[1] if name[1] == email[1] else "%s; user.email: %s" % (
        name[1], email[1])
    return "commits in %s are by %s <%s> (%s)" % (shown, name[0], email[0],
                                                  where)


def patch_commits(src):
    state = read_state(src)
    return [p["commit"] for p in state["patches"]] if state else []
