"""Reports: tables, JSON, Markdown and HTML from the statistics layer's output."""
