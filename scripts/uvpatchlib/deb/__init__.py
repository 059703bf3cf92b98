"""`deb`: the default base as Debian packages, and `test --suite
debian`, their checks."""
