"""Build: compile the base or patched tree with CMake and Ninja, install
it into a prefix, or export it into another project (vendor)."""
