"""Where tasks come from: importers of public benchmarks (``swebench``)."""
