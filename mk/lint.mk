# Lint: ruff (pycodestyle, pyflakes, import order, bugbear, pyupgrade, simplify; line length 120)
# and mypy on the generator, both pinned in the venv's `lint` extra and configured in
# pyproject.toml. Both always run, so one run lists every finding. `make test` runs it too: a
# finding fails the run.

.PHONY: lint
lint: venv ## ruff check and mypy on the generator (generator/vllm_eks; config in pyproject.toml)
	@rc=0; \
	echo ">>> ruff check generator/vllm_eks"; $(BIN)/ruff check generator/vllm_eks || rc=1; \
	echo ">>> mypy"; $(BIN)/mypy || rc=1; \
	exit $$rc
