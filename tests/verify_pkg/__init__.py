"""A small model zoo for the `migrator verify` tests: a package importing itself both relatively
and absolutely, as real model zoos do. Every model here is in its original, unmigrated form."""
