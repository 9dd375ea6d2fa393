"""``packs export harbor``: a pack's tasks written as Harbor task directories (docs/task-format.md, "Exporting to
Harbor"; ``README.md``): the entry is ``export.export_pack``."""
