"""vllm-eks: size vLLM deployments on Amazon EKS by arithmetic and write Helm values for them."""

__version__ = "0.1.0"
