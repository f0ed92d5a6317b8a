"""A pool's queue as the last cycle left it, and the requests to look at it again: the stored order
(`order`), the stored waits (`waits`), jobs sitting out after a fault (`faults`) and the coalesced
evaluation requests (`triggers`). Everything that changes a queue asks for a cycle through here, so it
sits below jobs, runs, preemption and the cycle itself."""
