"""Concurrency sweeps with `vllm bench serve`: run them, load their result files, find the knee,
turn throughput into cost per million tokens, plot, compare with the Plan and recommend engine
and autoscaling settings.

One module per concern: results (the result file model and loading), knee (the knee and the SLO
limit), cost, plots, compare (Plan estimates against measurements), recommend, analyze (the
report) and runner (the sweep)."""
