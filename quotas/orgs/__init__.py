"""The organisation tree above tenants: org units, their members, guarantees and limits (issue 39)."""
