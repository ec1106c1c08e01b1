# The main job: plan a model on an instance, write values for every chart, render every chart.
#   make render [MODEL=...] [INSTANCE=...] [OUT=...] [NAMESPACE=llm] [RELEASE=vllm]
# Offline: the built-in catalogs and the pinned helm are all it needs.
render: venv helm ## plan MODEL on INSTANCE, write values into OUT and render every chart
	$(BIN)/vllm-eks plan --model $(MODEL) --instance $(INSTANCE)
	$(BIN)/vllm-eks values --model $(MODEL) --instance $(INSTANCE) --namespace $(NAMESPACE) --release $(RELEASE) --out $(OUT)
	@mkdir -p $(OUT)/rendered
	@for chart in $(CHARTS); do \
	  $(TOOLS)/bin/helm4 template $(RELEASE) charts/$$chart --namespace $(NAMESPACE) -f $(OUT)/$$chart.yaml > $(OUT)/rendered/$$chart.yaml; \
	  echo "rendered charts/$$chart -> $(OUT)/rendered/$$chart.yaml ($$(grep -c '^kind:' $(OUT)/rendered/$$chart.yaml) objects)"; \
	done

# README blocks generated from the tools (example plan, example recommend, scenario list); `docs` also runs them.
readme: venv ## regenerate the README blocks made by the tools (example plan, example recommend, scenario list)
	$(BIN)/python tools/update_readme.py
docs: readme calibration-docs

# docs/calibration-logs.md's table of public vLLM logs, predicted through the generator.
calibration-docs: venv ## regenerate the calibration table in docs/calibration-logs.md
	$(BIN)/python tools/gen_calibration_docs.py

# Every chart rendered with every values file it is tested with, and every scenario's plan.json,
# one file each under SNAPSHOT: compare two with `diff -r` to show a change keeps the renders.
SNAPSHOT ?= out/snapshot
snapshot: venv helm ## render every chart x values file (scenarios and ci/) into SNAPSHOT for diff -r
	$(BIN)/python tools/render_snapshot.py $(SNAPSHOT)
