"""What the CLI writes: the scenario folder, commented values files, the human-readable report."""
