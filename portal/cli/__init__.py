"""`gpuq`, the portal's command line for people who live in terminals: it talks to the REST API with a
personal token. Standard library only, and it imports nothing else of the portal: the package installs
`portal/cli` alone (pyproject), so the script runs on a laptop without Django or the checkout."""
