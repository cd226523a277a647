"""Tests of the providers added with the recipe (issue 11)."""
