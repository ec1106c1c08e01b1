"""Values of charts/vllm-inference, split by concern."""
