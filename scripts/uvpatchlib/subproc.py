"""Running subprocesses, git among them: each shown the same way (with
-v) and a failure reported as a UvPatchError naming the command."""

import os
import shlex
import subprocess
import sys

from .console import show_command
from .errors import UvPatchError, EXIT_FAILURE


def run(cmd, cwd=None, env=None, capture=False, check=True, input=None,
        timeout=None, what=None, inherit=None):
    """Runs ``cmd``; a non-zero status raises UvPatchError naming it.

    With ``capture`` the output is returned (stdout and stderr kept apart);
    otherwise it goes to our stderr, so stdout stays for results. ``env``
    is added to ``inherit`` (default: our own environment).
    """
    cmd = [str(c) for c in cmd]
    show_command(cmd, cwd)
    full_env = None
    if env is not None or inherit is not None:
        full_env = dict(os.environ if inherit is None else inherit)
        full_env.update(env or {})
    try:
        res = subprocess.run(
            cmd, cwd=cwd, env=full_env, input=input, timeout=timeout,
            stdout=subprocess.PIPE if capture else sys.stderr,
            stderr=subprocess.PIPE if capture else None,
            text=True)
    except FileNotFoundError:
        raise UvPatchError("%s: command not found" % cmd[0],
                           hint="install %s (see README.md, "
                                "Prerequisites)" % cmd[0])
    except subprocess.TimeoutExpired:
        raise UvPatchError("%s timed out after %s s: %s"
                           % (what or cmd[0], timeout, shlex.join(cmd)),
                           hint="check that it is not waiting for input or "
                                "the network")
    if check and res.returncode != 0:
        detail = ""
        if capture and res.stderr.strip():
            detail = "\n" + res.stderr.strip()
        raise UvPatchError(
            "%s failed with exit status %d: %s%s"
            % (what or cmd[0], res.returncode, shlex.join(cmd), detail),
            hint="run the command by hand to see all of its output",
            status=EXIT_FAILURE)
    return res


# What of the user's GIT_* environment reaches the tool's git: how to
# reach a server (proxies, certificates, ssh) and tracing. The rest picks
# a repository, an index, objects, config or dates (a hook runs with
# GIT_DIR and GIT_INDEX_FILE of the user's commit), so it is dropped.
_GIT_KEPT = ("GIT_SSH", "GIT_SSL_", "GIT_PROXY_", "GIT_CURL_", "GIT_HTTP_",
             "GIT_TRACE", "GIT_ALLOW_PROTOCOL", "GIT_PROTOCOL_FROM_USER")


def git_environ():
    """Our environment without the GIT_* variables that would make the
    tool's git work on another repository or with other settings."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("GIT_") or k.startswith(_GIT_KEPT)}


def git(args, cwd=None, capture=True, check=True, env=None, input=None):
    """Runs git with a fixed, reproducible identity, no user config and
    none of the user's GIT_* variables that select a repository."""
    fixed = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "uvpatch",
        "GIT_AUTHOR_EMAIL": "uvpatch@invalid",
        "GIT_COMMITTER_NAME": "uvpatch",
        "GIT_COMMITTER_EMAIL": "uvpatch@invalid",
        "LC_ALL": "C",
    }
    if env:
        fixed.update(env)
    return run(["git"] + list(args), cwd=cwd, capture=capture, check=check,
               env=fixed, input=input, what="git " + args[0],
               inherit=git_environ())


def git_out(args, cwd=None, env=None):
    return git(args, cwd=cwd, env=env).stdout.strip()


def delete_refs(prefix, cwd):
    """Deletes every ref under ``prefix`` in one git call: a bundle from a
    mirror holds some 10,000, and a call each took minutes."""
    refs = git_out(["for-each-ref", "--format=%(refname)", prefix],
                   cwd=cwd).split()
    if refs:
        git(["update-ref", "--stdin", "-z"], cwd=cwd, input="".join(
            "delete %s\0\0" % ref for ref in refs))
