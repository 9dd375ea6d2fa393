"""Harbor task directories (docs/task-format.md, "Harbor tasks" and "Exporting to Harbor"): ``model`` reads a task
directory and its task.toml (every field up to schema 1.4, unknown ones kept and named); ``export`` writes a pack's
tasks as task directories (``render``: task.toml and the scripts; ``export_env``: the Dockerfile)."""
