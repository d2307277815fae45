"""Writes of the competition layer, one module per seam: entry (joining, attempts). Callers
import the module they need (``from competitions.services import entry``)."""
