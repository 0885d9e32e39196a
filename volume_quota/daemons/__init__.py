"""The long-running roles assembled from configuration: publisher and decider daemons.

Each daemon wires a role's parts (from ``publisher`` or ``consumer``) to the shell's parts
(settings, Kafka client configuration, HTTP endpoints, logging) and runs until stopped.
"""
