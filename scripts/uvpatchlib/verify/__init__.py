"""Verify: run what was built (the regression programs, libuv's own
suite, the tool's unit tests, consumers of the installed library) and
print one result line per test; record the results and write them up in
docs/results.md."""
