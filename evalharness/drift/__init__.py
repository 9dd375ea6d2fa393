"""Daily drift tracking: streams run every day in cron, alarms only on real change (docs/drift.md)."""
