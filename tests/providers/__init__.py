"""Every provider's verifier, held to one table of cases (`cases.py`)."""
