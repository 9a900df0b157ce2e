"""A trusted module that cannot be imported (a payload naming a class here fails as a job does)."""

raise RuntimeError("this module is broken")
