"""Series: deps.json and the patch files; apply the series onto its base,
lint it, refresh it from the commits and rebase it onto another upstream
commit (rebase/, one subpackage)."""
