"""Notices to the owners of preempted or reclaimed jobs: content, channels, an outbox and its delivery."""
