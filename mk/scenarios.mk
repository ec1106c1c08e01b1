# Committed example scenarios (values/<name>/), generated from values/scenarios.yaml.
values: venv ## regenerate the committed scenarios under values/
	$(BIN)/python tools/gen_values.py values
