# Committed example scenarios (values/<name>/), generated from values/scenarios.yaml.
values: venv
	$(BIN)/python tools/gen_values.py values
