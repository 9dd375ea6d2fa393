"""Harnesses: what drives a model in a sandbox. Built-in kinds live here; configurations in harnesses/."""
