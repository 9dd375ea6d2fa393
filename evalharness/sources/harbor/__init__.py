"""Harbor task directories (docs/task-format.md, "Harbor tasks"): ``model`` reads a task directory and its
task.toml (every field up to schema 1.4, unknown ones kept and named)."""
