"""The report's analysis: the run records it reads, the bootstrap and the claim rule,
the claims, its tables, plots and summary.json, the algorithms compared, the price
of diversity and the critic table (`experiments.report` and `experiments.tuning`
write them)."""
