"""The portal app's own rows: process heartbeats (portal.liveness)."""
from portal.liveness.models import Heartbeat  # noqa: F401
