"""Scaffolding for benchmarks, the demo and the tests, kept out of the product packages: synthetic engine
snapshots (`engine`, pure Python like the engine), a synthetic world in the database (`world`), page
timings (`pages`), a private local Slurm from Debian's packages (`localcluster`), the Slurm benchmarks' one set-up
(`slurm_pool`) and their start-latency and submit benchmarks (`slurm_start`, `slurm_submit`), organisation trees over both (`tree`), and what each benchmark process does first
(`process`: the CPU reference R, the worker's frozen heap). Nothing in the product imports it; `manage.py bench_*`,
`demo_slurm` and the tests do."""
