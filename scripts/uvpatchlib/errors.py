"""The one error type of the tool: a message, a hint and an exit status."""


class UvPatchError(Exception):
    """A failure the user can act on.

    The command line prints ``error: <message>`` and, when given,
    ``hint: <hint>`` on stderr, and exits with ``status``.
    """

    def __init__(self, message, hint=None, status=1):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.status = status


# Exit statuses, so scripts can tell failures apart.
EXIT_FAILURE = 1      # a step failed (build, tests, a subprocess)
EXIT_USAGE = 2        # bad command line
EXIT_MANIFEST = 3     # deps.json or a patch file is invalid
EXIT_FETCH = 4        # the pinned tree could not be obtained or verified
EXIT_APPLY = 5        # the series does not apply exactly
EXIT_STATE = 6        # out/ holds work that would be lost
