# The generator as a package (tests marked `package`): `make dist` builds the wheel and the sdist
# with PyPA's `build` (an isolated build environment with the setuptools pyproject.toml names).
# The wheel carries the catalogs, the templates and the three charts (setup.py copies charts/
# into vllm_eks/_charts), so `pip install` / `pipx install` of it sizes, writes values and runs
# check-fit without a checkout. tests/package installs the wheel this target builds into an
# empty venv and runs the README's sizing commands with it.

DIST_DIR ?= dist

TEST_TIERS += package
TEST_ARGS_package := -m package tests/package

.PHONY: dist test-package
dist: venv ## build the vllm-eks wheel and sdist into dist/ (the wheel carries the charts)
	rm -rf $(DIST_DIR)
	$(BIN)/python -m build --outdir $(DIST_DIR) .
	@ls -1 $(DIST_DIR)

test-package: setup ## only the package tier: the built wheel installed into an empty venv runs the README's sizing commands
	$(BIN)/pytest $(TEST_ARGS_package)

# The version policy (docs/versioning.md): a chart changed since the target branch needs a higher
# Chart.yaml version. CHART_VERSION_BASE names the target (default: the merge base with origin/main).
.PHONY: check-versions
check-versions: venv ## fail when a chart changed since the target branch (CHART_VERSION_BASE, default origin/main) without a version bump
	$(BIN)/python tools/check_chart_versions.py $(if $(CHART_VERSION_BASE),--base $(CHART_VERSION_BASE))
