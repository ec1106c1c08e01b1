# AWS tier (tests marked `aws`): --instance lookups outside the catalog against moto's EC2
# (DescribeInstanceTypes with moto's bundled instance-type data) and a local stand-in for the
# Pricing API's GetProducts (moto has no Pricing service), both on 127.0.0.1. The CLI runs in a
# venv of its own with the generator's `aws` extra: botocore pins python-dateutil<3, which the
# test venv's kubernetes>=37 cannot have (it needs >=3), so boto3 cannot sit in .venv.

AWS_VENV := .venv-aws
AWS_MOTO_VERSION := 5.2.5
export VLLM_EKS_AWS_VENV := $(abspath $(AWS_VENV))

TEST_SETUP_TARGETS += aws-setup
TEST_TIERS += aws
TEST_ARGS_aws := -m aws tests/aws

.PHONY: aws-setup test-aws
aws-setup: $(AWS_VENV)/.installed ## create .venv-aws: the generator with boto3 (its aws extra) and moto's server
$(AWS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(AWS_VENV)
	$(AWS_VENV)/bin/pip install --quiet --upgrade pip
	$(AWS_VENV)/bin/pip install --quiet -e '.[aws]' 'moto[server]==$(AWS_MOTO_VERSION)'
	$(AWS_VENV)/bin/pip check
	touch $@

test-aws: venv aws-setup ## only the aws tier: EC2 and Pricing lookups against moto and a local Pricing stand-in
	$(BIN)/pytest $(TEST_ARGS_aws)
