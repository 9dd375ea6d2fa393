"""Auditing a benchmark: probes, investigator agents, human labels, agreement, the broken fraction.

See ``docs/audit.md``; the pieces are listed in ``evalharness/README.md``.
"""
