"""`test --case PROGRAM[/CASE]`: one regression program, or one case of
it, patched and on the base, on every target (Windows under Wine
included), with the command each run was; no other suite runs.
"""

from ..errors import UvPatchError, EXIT_USAGE
from ..series.cases import known_cases, near
from .regress import (judge_base, list_cases, proofs_for, proved_elsewhere,
                      run_case)


def parse_only(root, only):
    """(program, case or None) of --case, checked against the case
    tables of tests/regress before anything is built."""
    program, _, case = only.partition("/")
    known = known_cases(root)
    if program not in known:
        raise UvPatchError(
            "--case %s: tests/regress has no program %s%s"
            % (only, program, near(program, known)),
            hint="a program is a *.c file or a folder of tests/regress; "
                 "give PROGRAM or PROGRAM/CASE", status=EXIT_USAGE)
    cases = known[program]
    if case and cases is not None and case not in cases:
        raise UvPatchError(
            "--case %s: %s has no case %s%s" % (only, program, case,
                                                 near(case, cases)),
            hint="`PROGRAM --list` on a build lists its cases; so does "
                 "the table in its source", status=EXIT_USAGE)
    return program, case or None


def run_only(manifest, patched, base, runner, tally, program, case=None):
    """The case (or every case of the program) on ``patched`` and
    ``base``, each result followed by the command that gave it."""
    target = patched.target
    proofs = proofs_for(manifest, target)
    elsewhere = proved_elsewhere(manifest, target)
    try:
        cases = [case] if case else list_cases(runner, patched, program)
    except UvPatchError as e:
        tally.result("FAIL", "%s regress %s" % (target, program), e.message)
        return
    for one in cases:
        name = "%s/%s" % (program, one)
        notes = []
        status, why = run_case(runner, patched, program, one, notes)
        tally.result(status, "%s regress %s" % (target, name), why)
        tally.info("patched: $ " + runner.shown(patched.program(program),
                                                [one]))
        for note in notes:
            tally.info("patched: " + note)
        base_notes = []
        base_status, base_why = run_case(runner, base, program, one,
                                         base_notes)
        judge_base(tally, runner, target, name, proofs, base_status,
                   base_why, elsewhere, status)
        tally.info("base:    $ " + runner.shown(base.program(program),
                                                [one]))
        for note in base_notes:
            tally.info("base:    " + note)
