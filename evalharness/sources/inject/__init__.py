"""`packs inject`: injected defects (docs/injection.md). The entry point is ``pipeline.Injector``."""
