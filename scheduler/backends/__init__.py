"""Backends talk to a cluster: one per pool (`registry`), each turning a start, stop or signal into a call
on it and reading back what runs and which nodes exist (`base` holds the interface and its plain values).
They never touch the database; `scheduler.sync` calls them and records what they report."""
