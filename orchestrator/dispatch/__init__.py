"""Step 3, dispatch (client side): the cluster connection and TLS, the dispatcher (one entry, a serial
and a fleet loop), the bench hosts a sweep runs on and the fleet's rounds, adaptive rounds, the first
ok run's check of a bench's gate metrics, progress. Its imports: docs/design.md, "Import rules"."""
