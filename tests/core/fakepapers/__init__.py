"""A stand-in papers package for testing the framework without heavy dependencies."""
