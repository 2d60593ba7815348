"""ml_collections configs: `--config=configs/<name>.py:domain=...,size=...`."""
