"""`vllm-eks recommend`: which instance type serves a model, ranked by cost."""
