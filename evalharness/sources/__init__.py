"""Where tasks come from: importers of public benchmarks (``swebench``), the leak check (``leak``)."""
