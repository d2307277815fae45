"""Reads of the competition layer, one module per seam: phase (where a competing period
stands). Callers import the module they need (``from competitions.selectors import phase``)."""
