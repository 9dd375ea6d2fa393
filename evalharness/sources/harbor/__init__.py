"""Harbor task directories (docs/task-format.md, "Harbor tasks" and "Exporting to Harbor"): ``model`` reads a task
directory and its task.toml (every field up to schema 1.4, unknown ones kept and named), ``importer`` makes a pack
of them. Three rooms, each with its README: ``checks/`` (the static checks), ``run/`` (images, trials, validation)
and ``export/`` (a pack's tasks written as task directories)."""
