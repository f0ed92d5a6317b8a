"""Pure-Python scheduling engine: snapshot in, decisions out. No Django imports allowed here."""
