"""One error hierarchy. Every message names the offending input and what would be valid;
the CLI prints it as one line and exits 1."""


class VllmEksError(Exception):
    """Base class: a user-facing problem with the input."""


class UnknownModelError(VllmEksError):
    pass


class HubModelError(UnknownModelError):
    """A Hugging Face repo id that cannot be read: not found, gated without a token, a revision it
    lacks, no network and nothing cached, or not a transformers model."""


class UnknownInstanceError(VllmEksError):
    pass


class ModelConfigError(VllmEksError):
    """A config.json that is missing, unreadable or lacks a required field."""


class UnsupportedArchitectureError(ModelConfigError):
    """A config.json of an architecture the sizing does not model (state-space or linear-attention
    layers, DeepSeek-V3.2's indexer): refused by name rather than sized as something else."""


class InvalidOptionError(VllmEksError):
    """A flag value that is out of range or conflicts with another flag."""


class QuotaShortfallError(VllmEksError):
    """A --quota below the vCPUs the deployment needs in that EC2 quota bucket."""


class DoesNotFitError(VllmEksError):
    """Nothing the planner may choose fits the model on the hardware."""


class BenchmarkResultError(VllmEksError):
    """A `vllm bench serve` result file (or a set of them) that cannot be analysed: names the file
    and the key."""


class BenchmarkRunError(VllmEksError):
    """`vllm bench serve` could not be started or failed at one concurrency level."""
