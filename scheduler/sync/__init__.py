"""Reconciling the portal with each pool's cluster: the tick that starts admitted runs and mirrors what
runs (`tick`), the node inventory (`inventory`) and the intake of jobs submitted to the cluster outside the
portal (`intake`), with their periodic tasks. It drives runs and jobs through their services and talks to
the cluster through `scheduler.backends`."""
