"""iclr24: ICLR 2024 papers as importable methods plus executable, verdict-bearing claims."""

__version__ = "0.1.0"
