"""Environment recipe tables that ship with evalharness (data; see docs/task-format.md)."""
