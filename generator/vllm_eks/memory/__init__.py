"""The per-GPU memory budget: weights, KV cache and vLLM's other allocations."""
