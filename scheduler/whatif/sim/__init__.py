"""The pure what-if replay: a trace of one pool's window, scenarios as changes to it, a discrete-event
simulation that runs the real engine's `decide` over it, and the figures that compare two replays.

Pure Python like `scheduler.engine` (tests/engine/test_purity.py checks it imports no Django)."""
