"""The application shell of volume-quota: the ``volume-quota`` command and everything around it.

Command line (``cli``, ``commands/``), configuration, logging, the HTTP endpoints, Kafka client
configuration, certificate files, and the daemons that assemble the roles. The roles live in
their own packages (``publisher``, ``consumer``, ``spark_history``) and never import this one.
"""
