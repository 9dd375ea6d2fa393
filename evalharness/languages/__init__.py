"""Language layer: what a language module provides (``base``), the registry (``registry``), one module per language."""
