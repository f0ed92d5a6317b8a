"""Pure-Python scheduling engine: snapshot in, decisions out. No Django imports allowed here."""

from .admission import decide

__all__ = ["decide"]
