"""One thin module per ``volume-quota`` subcommand: parse, build the configuration, call the role.

Each module has ``register(subcommands)``; heavy or optional imports (Spark, the local test
cluster) happen inside ``run`` so that ``volume-quota --help`` works with the core install.
"""
