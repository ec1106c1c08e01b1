# values.schema.json and values.yaml of every chart and the values reference in each chart README, all
# generated from the generator's pydantic values models (tools/gen-schemas.py lists the charts).

schemas: venv ## regenerate values.schema.json and values.yaml of every chart from the pydantic models
	$(BIN)/python tools/gen-schemas.py

docs: schemas ## regenerate the schemas, the chart READMEs' values tables and the README blocks
	$(BIN)/python tools/gen-schemas.py --docs

# Fails when a committed schema, values.yaml or README table differs from what the models generate (the
# calibration table from what the generator predicts for the logged runs, and the top-level
# README's generated blocks, the plan and recommend examples and the scenario list, from the tools).
check-schemas: venv ## fail when a committed schema, values.yaml, chart README table, calibration table or README block has drifted
	$(BIN)/python tools/gen-schemas.py --check
	$(BIN)/python tools/gen-schemas.py --docs --check
	$(BIN)/python tools/gen_calibration_docs.py --check
	$(BIN)/python tools/update_readme.py --check
