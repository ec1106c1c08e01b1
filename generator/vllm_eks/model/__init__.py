"""What a model is, read from its config.json: architecture, attention backend, hybrid state, weights."""
