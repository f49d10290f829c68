"""RQ job functions (one module per job family) and the queues they run on."""
