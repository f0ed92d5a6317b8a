"""What every benchmark command does to its own process before it measures: the CPU reference R (the loop
`s=0; for i in range(10**7): s+=i`, at module level in the issue, here in a function of the same
interpreter, in the same run) and the worker's start-up configuration (portal/worker_heap.py: the heap
loaded at start-up is frozen), so figures are ratios to R measured where a cycle really runs."""
import gc
import time


_REFERENCE = compile("s = 0\nfor i in range(10**7):\n    s += i\n", "<cpu reference>", "exec")


def cpu_reference_s() -> float:
    """CPU seconds of the reference loop, in this process. It runs at module level, as the issue states
    it (its names are a namespace's, not a function's locals: about twice the time of the same loop in a
    function, which is what the older benchmarks' `cpu_reference_s` timed)."""
    start = time.process_time()
    exec(_REFERENCE, {})
    return time.process_time() - start


def worker_like() -> int:
    """Freeze what this process loaded, as a worker does once Django and the apps are loaded."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
