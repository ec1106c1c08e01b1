"""The planner: decisions (layout, context, batch) and one module per remaining Plan section."""
