"""Per-chart values models (the source of each values.schema.json) and their builders from a Plan."""
