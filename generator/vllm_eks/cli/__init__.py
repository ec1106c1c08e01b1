"""The `vllm-eks` command line."""
