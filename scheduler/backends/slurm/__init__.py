"""The Slurm backend: portal-submitted jobs through `sbatch`, cluster-native held jobs, inventory from
`sinfo`, lifecycle from `squeue`, stops through `scancel`/`scontrol`. All through the CLI (cli.py)."""
