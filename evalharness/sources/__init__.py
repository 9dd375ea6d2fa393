"""Where tasks come from: importers of public benchmarks (``swebench``), your own history (``mine``),
injected defects (``inject``), scaffolding and hand-written tasks (``scaffold``, ``handwritten``), and the leak
check they share (``leak``)."""
