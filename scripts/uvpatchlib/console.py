"""What the tool prints on stderr besides errors: progress lines, the
commands it runs (with -v), and paths as messages name them."""

import os
import shlex
import sys

VERBOSE = False


def step(text):
    """A top-level step: ``=== fetch``."""
    print("=== " + text, file=sys.stderr, flush=True)


def note(text):
    """A detail of the current step: ``--- verified tree 2a518b5``."""
    print("--- " + text, file=sys.stderr, flush=True)


def shown(path):
    """A path as a message names it: relative to the working folder when
    it lies under it (out/v1.x/src), else absolute."""
    path = os.path.abspath(path)
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel == ".." or rel.startswith(".." + os.sep) else rel


def git_hint(path, args):
    """A git command run in ``path``, as a hint names it, to be pasted
    into a shell: ``git -C out/v1.x/src rebase --continue``."""
    return "`git -C %s %s`" % (shlex.quote(shown(path)), args)


def show_command(cmd, cwd=None):
    """With -v, a command about to run: ``+ git fetch ... (in DIR)``."""
    if VERBOSE:
        where = " (in %s)" % cwd if cwd else ""
        print("+ " + shlex.join(str(c) for c in cmd) + where,
              file=sys.stderr, flush=True)
