"""The command line: one table of subcommands, one error path."""

import argparse
import errno
import os
import sys

from . import VERSION, console
from .errors import UvPatchError, EXIT_USAGE
from .fsutil import Lock, check_cmake_paths, check_out
from .series.manifest import load
from .build.cmake import CONFIGS, TARGETS

# Pull requests go to upstream's development branch.
UPSTREAM_BASE = "v1.x"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def cmd_fetch(args, manifest):
    from .source.fetch import Fetcher
    console.step("fetch")  # apply_series says it itself
    entry = Fetcher(manifest).fetch(args.source)
    print(entry.tree_dir)


def cmd_apply(args, manifest):
    from .series.apply import apply_series, use_identity
    with Lock(args.out, "apply"):
        src = apply_series(manifest, args.out, source=args.source,
                           discard=args.discard)
        console.note(use_identity(args.repo, src))
        print(src)


def cmd_build(args, manifest):
    from .build.cmake import build_variant
    from .build.install import check_prefix, install
    if args.prefix is not None:
        # Refused before minutes of building, and again before installing.
        check_prefix(args.prefix, manifest)
    with Lock(args.out, "build"):
        variant = build_variant(manifest, args.out, args.target,
                                not args.unpatched, args.config, args.source)
        if args.prefix is not None:
            install(manifest, variant, args.prefix)
    print(variant.dir)


def cmd_test(args, manifest):
    from .verify.consumers import test_consumers
    from .verify.testing import test
    from .bench.command import smoke
    from .bench.dnsbench import smoke as dns_smoke
    from .deb.suite import test_debian
    # Without --base: every base, the default first and in full (Debian's
    # packages: the default base alone).
    names = [args.base] if args.base else [manifest.name] \
        if args.suite == "debian" else \
        [manifest.name] + [b["name"] for b in manifest.doc["bases"]
                           if b["name"] != manifest.name]
    manifests = [load(args.repo, base=name) for name in names]
    # The runner imports none of the suites built on it: they are put
    # together here. The bench's smoke check asserts no figure: it proves
    # the benchmark runs and its report parses; the DNS one that named and
    # kresd answer on both libraries (one SKIP line without them).
    test(manifests, args.out_root, suite=args.suite, target=args.target,
         config=args.config, source=args.source, consumers=test_consumers,
         extras=[smoke, dns_smoke], debian=test_debian,
         only=args.case)


def cmd_deb(args, manifest):
    from .deb.package import build, check_can_build, give_back
    # Refused before anything is written: root makes out/ its own.
    check_can_build(manifest)
    try:
        with Lock(args.out, "deb"):
            build(manifest, args.out, refresh_chroot=args.refresh_chroot)
    finally:
        give_back(args.out_root, args.out)


def cmd_bases(args, manifest):
    from .series.bases import base_names, ci_steps, describe_bases
    if args.names:
        print(base_names(manifest), end="")
    elif args.default:
        print(manifest.doc["default_base"])
    elif args.ci:
        print(ci_steps(manifest), end="")
    else:
        print(describe_bases(manifest), end="")


def _add_bases_options(p):
    what = p.add_mutually_exclusive_group()
    what.add_argument("--names", action="store_true",
                      help="print each base's name alone, a line each "
                           "(for scripts: .ci/run, the GitHub workflow)")
    what.add_argument("--default", action="store_true",
                      help="print the default base's name (for scripts)")
    what.add_argument("--ci", action="store_true",
                      help="print the steps CI runs on --base beyond the "
                           "test command (deps.json's \"ci\"), a line each")
    _add_base(p)


def cmd_refresh(args, manifest):
    from .series.refresh import refresh
    console.step("refresh")
    with Lock(args.out, "refresh"):
        refresh(manifest, args.out, drop=args.drop)


def cmd_check(args, manifest):
    from .series.check import check
    console.step("check")
    with Lock(args.out, "check"):
        failed = check(manifest, args.out, _print_result)
        if args.bisect and not failed:
            from .verify.bisect import bisect
            console.step("check --bisect")
            failed = bisect(manifest, args.out, _print_result)
    if failed:
        raise UvPatchError("%d check(s) of the series failed" % failed,
                           hint="fix a message in %s (git commit --amend) "
                                "and run `scripts/uvpatch refresh%s`; a "
                                "missing or misspelt program, proof case or "
                                "no_proof reason goes in deps.json "
                                "(CONTRIBUTING.md)"
                                % (console.shown(os.path.join(args.out,
                                                              "src")),
                                   manifest.base_option))


def cmd_carry(args, manifest):
    from .series.carry import carry
    console.step("carry")
    # Each series it carries to is locked in turn as well.
    with Lock(args.out, "carry"):
        failed = carry(manifest, args.repo, args.out_root, args.patch,
                       targets=args.to, since=args.since,
                       report=_print_result)
    if failed:
        raise UvPatchError("%d check(s) of the series it touched failed"
                           % failed,
                           hint="each FAIL line names the series and the "
                                "rule: fix it in out/<base>/src, then "
                                "`scripts/uvpatch refresh --base <base>`")


def cmd_vendor(args, manifest):
    from .build.vendor import vendor
    with Lock(args.out, "vendor"):
        dest, _ = vendor(manifest, args.out, args.dest,
                         patched=not args.unpatched, force=args.force,
                         source=args.source)
    print(dest)


def cmd_rebase(args, manifest):
    from .series import rebase
    # One rebase at a time, in out/rebase, whichever base it starts from.
    with Lock(args.out_root, "rebase"):
        if args.abort:
            rebase.abort(args.out_root)
        elif args.resume:
            rebase.resume(args.repo, args.out_root)
        else:
            rebase.start(manifest, args.out_root, args.onto, args.source,
                         name=args.name, nearest=args.base is None)


def cmd_bench(args, manifest):
    from .bench import analyse, command, compare as comparing
    compare = args.compare or []
    if len(compare) > 2:
        raise UvPatchError("--compare takes OLD.json, or OLD.json NEW.json",
                           hint="give at most two report.json files",
                           status=EXIT_USAGE)
    # Read OLD first: a bad file should cost no minutes of measuring.
    reports = [comparing.load(path) for path in compare]
    if len(reports) == 2:
        print(comparing.compare(reports[0], reports[1]), end="")
        return
    from .bench import dnsbench  # --only dns: named, kresd, dnsperf
    only, dns = dnsbench.split_only(args.only)
    old_part = comparing.part(reports[0]) if reports else None
    if reports and not (old_part in dns if old_part else only or not dns):
        raise UvPatchError(
            "--compare %s: a %s report, and this run writes none" % (
                compare[0], old_part or "bench"),
            hint="measure the same part: --only %s" % (old_part or
                                                      "timers,udp,..."),
            status=EXIT_USAGE)
    for name in dns:
        with Lock(args.out, "bench"):
            if name == "dns":
                print(dnsbench.run(manifest, args.out, quick=args.quick,
                                   pairs=args.pairs,
                                   report_path=args.report,
                                   source=args.source), end="")
                written = "dns-report.json"
            else:
                from .bench import dnsinsn  # valgrind's callgrind
                print(dnsinsn.run(manifest, args.out, quick=args.quick,
                                  reps=args.pairs, report_path=args.report,
                                  source=args.source), end="")
                written = "dns-insn-report.json"
        if old_part == name:
            path = os.path.join(dnsbench.report_folder(
                args.out, args.report), written)
            print(comparing.compare(reports[0], comparing.load(path)),
                  end="")
    if dns and not only:
        return
    with Lock(args.out, "bench"):
        json_path = command.run(manifest, args.out, quick=args.quick,
                                only=only, report_path=args.report,
                                source=args.source)
    print(json_path[:-5] + ".md")
    if reports and not old_part:
        print(analyse.compare(reports[0], analyse.load_report(json_path)),
              end="")


def _add_bench_options(p):
    p.add_argument("--quick", action="store_true",
                   help="a short run (about a minute): proves it works, "
                        "figures are rough")
    p.add_argument("--only", action="append", metavar="PART",
                   help="timers|udp|errqueue|tool|dns|dns-insn (repeat "
                        "or separate by commas; default: all but dns, "
                        "which runs named, kresd and dnsperf, and "
                        "dns-insn, which runs them under valgrind for "
                        "each prefix of the series)")
    p.add_argument("--pairs", type=int, metavar="N",
                   help="dns: base/patched pairs of runs (default 8, "
                        "--quick 1); dns-insn: runs per prefix (default "
                        "2, --quick 1)")
    p.add_argument("--report", metavar="FILE",
                   help="where the Markdown report goes (default: "
                        "out/<base>/bench/report.md); report.json and the "
                        "SVG "
                        "plots go next to it")
    p.add_argument("--compare", nargs="+", metavar="JSON",
                   help="OLD.json: measure, then print the differences "
                        "from that earlier report.json (or dns-report.json, "
                        "dns-insn-report.json: the same part); OLD.json "
                        "NEW.json: print the differences between two "
                        "reports of one kind, without measuring")


def _add_rebase_options(p):
    p.add_argument("--base", metavar="NAME",
                   help="the series to start from (default: the supported "
                        "base nearest to REF, by commits between them)")
    p.add_argument("--name", metavar="NAME",
                   help="the base the result becomes: an existing base is "
                        "moved, a new name adds a base (default: REF's "
                        "tag, or `git describe` of its commit)")
    p.add_argument("--source", metavar="SRC",
                   help="where REF is: a git repository or bundle (default: "
                        "UVPATCH_SOURCE, else deps.json's git source), or a "
                        "tarball or directory of the new tree (REF is then "
                        "its label)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--onto", metavar="REF",
                      help="the upstream tag, branch or commit to move to "
                           "(with a tarball --source: its label, e.g. "
                           "v1.51.0)")
    what.add_argument("--continue", dest="resume", action="store_true",
                      help="go on after resolving a conflict in "
                           "out/rebase")
    what.add_argument("--abort", action="store_true",
                      help="drop the rebase in progress")


def cmd_results(args, manifest):
    from .verify.results import write_results
    print(write_results(manifest, args.out_root, args.write or os.path.join(
        args.repo, "docs", "results.md")))


def cmd_upstream(args, manifest):
    from .upstream.prepare import prepare
    with Lock(args.out, "upstream"):
        dest, failed = prepare(manifest, args.out, args.dest, onto=args.onto,
                               source=args.source, wanted=args.patch or (),
                               author=args.author, check=args.check,
                               report=_print_result)
    print(dest)
    if failed:
        raise UvPatchError("%d branch(es) fail on their own" % failed,
                           hint="each branch must build and pass alone: "
                                "fix the patch in %s and `scripts/uvpatch "
                                "refresh%s`; DEST holds the branches and "
                                "says what failed"
                                % (console.shown(os.path.join(args.out,
                                                              "src")),
                                   manifest.base_option))


def _print_result(status, name, why):
    print("%s %s: %s" % (status, name, why), flush=True)


def _add_base(p, default=None):
    p.add_argument("--base", metavar="NAME",
                   help="which supported base (scripts/uvpatch bases lists "
                        "them; default: %s)"
                        % (default or "deps.json's default_base"))


def _add_source(p):
    p.add_argument("--source", metavar="SRC",
                   help="a local git repository or bundle, a directory or "
                        "a tarball holding the pinned tree")


def _add_build_options(p):
    p.add_argument("--target", default="native",
                   choices=TARGETS,
                   help="what to build for (windows: mingw-w64 cross build "
                        "on Linux, MSVC on Windows)")
    p.add_argument("--config", default="Release",
                   choices=tuple(CONFIGS))


# name: (handler, help, options)
COMMANDS = {
    "fetch": (cmd_fetch, "obtain and verify the pinned libuv tree",
              [_add_base, _add_source]),
    "apply": (cmd_apply, "make out/<base>/src: the base commit plus the "
              "series",
              [_add_base, _add_source, lambda p: p.add_argument(
                  "--discard", action="store_true",
                  help="drop commits and edits in out/<base>/src that are "
                       "not in patches/")]),
    "bench": (cmd_bench, "measure base against patched (Release) and "
              "write a report for upstream: out/<base>/bench/report.md, "
              "report.json and SVG plots",
              [_add_base, _add_source, _add_bench_options]),
    "bases": (cmd_bases, "list the supported bases, where each one's "
              "source comes from and whether it is cached",
              [_add_bases_options]),
    "deb": (cmd_deb, "make Debian packages of the default base in "
            "out/<base>/deb: Debian's source package with the series in "
            "debian/patches, built in a trixie chroot (as root: "
            "debootstrap, chroot)",
            [_add_base, lambda p: p.add_argument(
                "--refresh-chroot", action="store_true",
                help="remake the cached trixie chroots (debootstrap) "
                     "first")]),
    "build": (cmd_build, "build libuv, its test runner and tests/regress",
              [_add_base, _add_source, _add_build_options,
               lambda p: p.add_argument("--unpatched", action="store_true",
                                        help="build the pristine base"),
               lambda p: p.add_argument("--prefix", metavar="DIR",
                                        help="then install it there with "
                                             "CMake's install rules (shared "
                                             "and static library, headers, "
                                             "pkg-config and CMake package "
                                             "files)")]),
    "carry": (cmd_carry, "carry a patch, or a change to it, from --base "
              "to the other series by three-way merge, then refresh and "
              "check each",
              [_add_base, lambda p: p.add_argument(
                  "--patch", metavar="N", required=True,
                  help="the patch of --base's series (number or file "
                       "name)"),
               lambda p: p.add_argument(
                   "--to", metavar="BASE", action="append",
                   help="only this series (repeat; default: every other "
                        "base)"),
               lambda p: p.add_argument(
                   "--since", metavar="REV", default="HEAD",
                   help="where the checkout's git has the patch as it was "
                        "before the change to carry (default: HEAD); a "
                        "series without a patch of that subject gets it "
                        "whole")]),
    "check": (cmd_check, "lint the series: hashes, canonical form, "
              "messages, a proof case for each fix, exact apply",
              [_add_base, lambda p: p.add_argument(
                  "--bisect", action="store_true",
                  help="also build each prefix of the series and run its "
                       "tests (slow)")]),
    "rebase": (cmd_rebase, "move the series to another upstream commit "
               "(three-way merge in out/rebase)",
               [_add_rebase_options]),
    "refresh": (cmd_refresh, "rewrite patches/ and deps.json from the "
                "commits in out/<base>/src",
                [_add_base, lambda p: p.add_argument(
                    "--drop", action="store_true",
                    help="remove the patches (and their proofs) that "
                         "out/<base>/src no longer has")]),
    "results": (cmd_results, "regenerate docs/results.md from what `test` "
                "recorded for each base in out/<base>/results/ (no figure "
                "typed by hand)",
                [lambda p: p.add_argument(
                    "--write", metavar="FILE",
                    help="write there instead of docs/results.md")]),
    "upstream": (cmd_upstream, "prepare patches for libuv: a git "
                 "repository with a branch, an mbox and a pull-request "
                 "text per patch, in DEST",
                 [lambda p: _add_base(p, UPSTREAM_BASE + " when declared"),
                  lambda p: p.add_argument(
                     "--onto", metavar="REF",
                     help="base the branches on this upstream tag, branch "
                          "or commit (default: the pinned base)"),
                  lambda p: p.add_argument(
                      "--source", metavar="SRC",
                      help="the git repository or bundle to find REF in "
                           "(default: deps.json's git source)"),
                  lambda p: p.add_argument(
                      "--check", action="store_true",
                      help="then build each branch on its own and test "
                           "it where its code runs (Unix: libuv's UDP "
                           "tests; Windows: mingw-w64 and Wine), and its "
                           "own tests unpatched and patched; the texts "
                           "quote the results"),
                  lambda p: p.add_argument(
                      "--author", metavar="'NAME <EMAIL>'",
                      help="who authors and signs off the commits "
                           "(default: git's user.name and user.email; "
                           "without them the command refuses)"),
                  lambda p: p.add_argument(
                      "--patch", metavar="N", action="append",
                      help="only this patch (number or file name; "
                           "repeat or separate by commas; default: all)"),
                  lambda p: p.add_argument("dest", metavar="DEST")]),
    "vendor": (cmd_vendor, "export the patched tree and UVPATCH.json "
               "into DEST (e.g. deps/libuv of a project)",
               [_add_base, _add_source,
                lambda p: p.add_argument("dest", metavar="DEST"),
                lambda p: p.add_argument("--unpatched", action="store_true",
                                         help="export the pristine base"),
                lambda p: p.add_argument(
                    "--force", action="store_true",
                    help="overwrite local edits in an earlier export")]),
    "test": (cmd_test, "run every test; ends 'N passed, N failed, N skipped'",
             [lambda p: p.add_argument(
                 "--base", metavar="NAME",
                 help="test this base only (default: every base, the "
                      "default one first; a base whose source cannot be "
                      "had is skipped with one line)"),
              _add_source,
              lambda p: p.add_argument(
                  "--suite", default="regression",
                  choices=("regression", "libuv", "all", "consumers",
                           "debian"),
                  help="regression: tool tests, regression programs and a "
                       "selection of libuv's suite; libuv: all of libuv's "
                       "suite against the base; all: both; consumers: "
                       "CMake and pkg-config builds against installed "
                       "prefixes, and Debian's Node.js 18 tests on the "
                       "installed libuv.so.1, patched against base; "
                       "debian: `deb`'s packages (made if missing): quilt, "
                       "lintian, ABI, bind9, knot-resolver and nodejs on "
                       "them in a trixie chroot, a reproducible rebuild "
                       "(root)"),
              lambda p: p.add_argument(
                  "--target", default=None,
                  choices=TARGETS,
                  help="test one target only (default: the host, and "
                       "Windows under Wine when it is installed)"),
              lambda p: p.add_argument(
                  "--config", default="Release",
                  choices=tuple(CONFIGS)),
              lambda p: p.add_argument(
                  "--case", metavar="PROGRAM[/CASE]",
                  help="run this regression program, or one case of it, "
                       "alone: patched and on the base, on every target "
                       "(Windows under Wine included), printing each "
                       "command it ran; no other test runs")]),
}


def parser():
    p = argparse.ArgumentParser(
        prog="uvpatch",
        description="Fetch, verify, patch, build and test the pinned libuv.")
    p.add_argument("--version", action="version", version=VERSION)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show the commands run")
    p.add_argument("--out", metavar="DIR",
                   help="work folder (default: out/ in the repository)")
    p.add_argument("--repo", metavar="DIR", default=REPO_ROOT,
                   help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (handler, text, options) in COMMANDS.items():
        sp = sub.add_parser(name, help=text, description=text)
        for add in options:
            add(sp)
        # Also after the command (`fetch --out DIR`, `test -v`); not given
        # there, they leave the ones before the command as they are.
        sp.add_argument("--out", metavar="DIR", default=argparse.SUPPRESS,
                        help="work folder (default: out/ in the "
                             "repository)")
        sp.add_argument("-v", "--verbose", action="store_true",
                        default=argparse.SUPPRESS,
                        help="show the commands run")
        sp.set_defaults(handler=handler)
    return p




def _base_of(args):
    """The base a command works on: --base, else the default base; pull
    requests go to upstream's development branch when it is declared."""
    base = getattr(args, "base", None)
    if base is None and args.command == "upstream":
        doc = load(args.repo, check_files=False).doc
        if UPSTREAM_BASE in [b["name"] for b in doc["bases"]]:
            base = UPSTREAM_BASE
    return base


def main(argv=None):
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    console.VERBOSE = args.verbose
    args.out_root = os.path.abspath(args.out or os.path.join(args.repo,
                                                             "out"))
    try:
        if args.out:
            check_out(args.out_root, args.repo)
        if args.command in ("build", "test", "bench", "upstream") or \
                getattr(args, "bisect", False):
            check_cmake_paths(args.out_root, args.repo)
        from .series.refresh import undo_interrupted
        undo_interrupted(args.repo)
        manifest = load(args.repo, base=_base_of(args))
        # Each base works in a folder of its own: bases never overwrite
        # each other's trees and builds.
        args.out = os.path.join(args.out_root, manifest.name)
        args.handler(args, manifest)
    except UvPatchError as e:
        print("error: " + e.message, file=sys.stderr)
        if e.hint:
            print("hint: " + e.hint, file=sys.stderr)
        return e.status
    except OSError as e:
        # Something changed under our feet (a file removed while we ran,
        # a full disk, a permission): say what, without a traceback.
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            print("error: no space left on the disk of %s (%s)"
                  % (e.filename or "the work folder", e), file=sys.stderr)
        else:
            print("error: %s" % e, file=sys.stderr)
        print("hint: " + os_error_hint(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        print("hint: " + INTERRUPTED_HINT, file=sys.stderr)
        return 130
    return 0


INTERRUPTED_HINT = ("run the command again: it finishes or undoes what the "
                    "interrupted run left")


def os_error_hint(e):
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return ("free space on the disk of %s (or move the work folder with "
                "--out, the cache with XDG_CACHE_HOME), then run the command "
                "again; nothing half-written is kept"
                % (e.filename or "the file named above"))
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return ("make %s writable, or choose another folder, then run the "
                "command again" % (e.filename or "the file named above"))
    return "fix the cause named above and run the command again"
