"""The quality gate: pure checks every path that makes tasks runs (``docs/mining.md``, "The quality gate")."""
