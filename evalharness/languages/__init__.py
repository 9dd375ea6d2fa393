"""Language modules: what evalharness knows about each language's projects."""
