"""One sub-package per paper; the folder name is the paper's slug (see catalog.toml)."""
