"""The one exception type the local cluster raises for problems a user can fix."""


class LocalClusterError(RuntimeError):
    """A failure with a message meant for a person: the CLI prints it as one line, no traceback.

    Raised for missing tools (java, mvn), failed jar downloads, brokers that do not come up
    (with the tail of their log), and misuse such as an unknown identity name.
    """
