"""Per-chart values models (the source of each chart's values.schema.json) and their builders."""
